package sim

import (
	"math/rand/v2"
	"sync"
	"time"
)

// lockedRand is the fleet's seeded random source, shared by its goroutines.
type lockedRand struct {
	mu sync.Mutex
	r  *rand.Rand
}

func newLockedRand(seed uint64) *lockedRand {
	return &lockedRand{r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

func (l *lockedRand) Float64() float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.r.Float64()
}

func (l *lockedRand) IntN(n int) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.r.IntN(n)
}

// Duration is uniform in [lo, hi].
func (l *lockedRand) Duration(lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return lo + time.Duration(l.r.Int64N(int64(hi-lo)+1))
}

func (l *lockedRand) UUID() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return seededUUID(l.r)
}
