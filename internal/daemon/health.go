package daemon

import (
	"fmt"
	"sync"
	"time"
)

// health is what /livez and /readyz answer from.
//
// Live: the pass loop is running and no pass has outlived PassTimeout by a
// minute (a pass that ignores its cancellation would otherwise keep the
// daemon "alive" and useless forever; a restart is the cure).
//
// Ready: a pass has completed (success, guarded or skipped) since the start,
// and fewer than UnreadyAfterFailures passes in a row have failed since. So
// the daemon is unready before its first pass and while Redis or PostgreSQL
// is out of reach, and ready again after the next pass that completes.
type health struct {
	unreadyAfter int
	stuckAfter   time.Duration

	mu          sync.Mutex
	loopRunning bool
	passSince   time.Time // start of the pass under way; zero between passes
	completed   bool
	failures    int
}

func newHealth(unreadyAfter int, stuckAfter time.Duration) *health {
	return &health{unreadyAfter: unreadyAfter, stuckAfter: stuckAfter}
}

func (h *health) loopStarted() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.loopRunning = true
}

func (h *health) loopStopped() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.loopRunning = false
}

func (h *health) passStarted(at time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.passSince = at
}

func (h *health) passEnded(completed bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.passSince = time.Time{}
	if completed {
		h.completed = true
		h.failures = 0
	} else {
		h.failures++
	}
}

// live says whether the daemon is alive at now, and if not why.
func (h *health) live(now time.Time) (bool, string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case !h.loopRunning:
		return false, "the pass loop is not running"
	case !h.passSince.IsZero() && now.Sub(h.passSince) > h.stuckAfter:
		return false, fmt.Sprintf("a pass has been running for %s", now.Sub(h.passSince).Round(time.Second))
	}
	return true, "ok"
}

// ready says whether the daemon is ready, and if not why. The reason never
// quotes a pass's error: /readyz may be reachable by more people than the
// logs, and errors can name hosts and users.
func (h *health) ready() (bool, string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case h.failures >= h.unreadyAfter && h.unreadyAfter > 0:
		return false, fmt.Sprintf("the last %d passes failed", h.failures)
	case !h.completed:
		return false, "no pass has completed yet"
	}
	return true, "ok"
}
