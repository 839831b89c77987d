package reaper_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/internal/sim"
	"github.com/lock-reaper/lock-reaper/reaper"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
	"github.com/lock-reaper/lock-reaper/reaper/redislocks"
)

// TestCrowdedDomainMembershipDeferred: a dead worker's membership of a
// domain that more live tasks reserve than a release call checks is
// deferred with its reason, as the call would leave it, and its other locks
// released; with as many tasks as a call checks, it is released.
func TestCrowdedDomainMembershipDeferred(t *testing.T) {
	t.Parallel()
	const callHoldings = 3
	limit := redislocks.ReserverCallLimit(callHoldings)
	for _, c := range []struct {
		name     string
		reserved int
		deferred bool
	}{
		{"crowded", limit + 1, true},
		{"fits", limit, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			domain := judge.SharedPrefix + "prn:core.domain:" + sim.NewUUID()
			live := f.Worker("1@live", 2*time.Second)
			for range c.reserved {
				reserved := []string{repo(), domain}
				f.Acquire("1@live", f.Task(judge.StateRunning, live, reserved, -1), reserved, false)
			}
			dead := f.Worker("1@dead", time.Hour)
			reserved := []string{repo(), domain}
			f.Acquire("1@dead", f.Task(judge.StateRunning, dead, reserved, -1), reserved, false)

			rep := f.pass(f.reaper(func(cfg *reaper.Config) { cfg.ReleaseCallHoldings = callHoldings }), reaper.ModeOnce)
			require.Empty(t, rep.Error)
			var membership *reaper.Finding
			for i, fd := range rep.Findings {
				require.Equal(t, "1@dead", fd.Owner, "only the dead worker's locks are findings")
				if fd.Kind == judge.KindShared {
					membership = &rep.Findings[i]
				} else {
					require.Equal(t, reaper.ResultReleased, fd.Result, fd.Key)
				}
			}
			require.NotNil(t, membership)
			if c.deferred {
				require.Equal(t, reaper.ResultDeferred, membership.Result)
				require.Equal(t, judge.DeferredTooManyReservers, membership.Deferred)
				require.True(t, f.holds(heldKey{membership.Key, "1@dead"}), "the membership stands")
			} else {
				require.Equal(t, reaper.ResultReleased, membership.Result)
			}
		})
	}
}
