package e2e

import (
	"crypto/rand"
	"encoding/binary"
	"flag"
	"os"
	"strconv"
	"testing"

	"github.com/lock-reaper/lock-reaper/internal/testing/testenv"
)

var (
	seedFlag = flag.String("seed", "", "seed of the chaos tests (default: $REAPER_E2E_SEED, else random)")
	soakFlag = flag.Duration("soak", 0, "run TestSoak with faults for this long (skipped when zero)")
)

// TestMain fails the package when a test leaves a goroutine behind: every
// fleet, reaper loop and daemon must be stopped by its test's cleanup.
func TestMain(m *testing.M) {
	testenv.VerifyTestMain(m)
}

// testSeed is the seed a test runs with: -seed, else REAPER_E2E_SEED, else
// random. A bad value fails the test rather than silently drawing another.
func testSeed(t *testing.T) uint64 {
	t.Helper()
	for _, v := range []struct{ from, value string }{{"-seed", *seedFlag}, {"REAPER_E2E_SEED", os.Getenv("REAPER_E2E_SEED")}} {
		if v.value == "" {
			continue
		}
		seed, err := strconv.ParseUint(v.value, 10, 64)
		if err != nil {
			t.Fatalf("%s %q: not an unsigned integer: %v", v.from, v.value, err)
		}
		return seed
	}
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return binary.LittleEndian.Uint64(b[:]) >> 1
}
