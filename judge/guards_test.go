package judge

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestJudgeMaxReleasesKeepsTaskHoldingsTogether: max_releases cuts between
// tasks, never between a task lock and the resource holdings that inherit
// its verdict.
func TestJudgeMaxReleasesKeepsTaskHoldingsTogether(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		// tasks of the dead worker, each with resources exclusive locks.
		tasks, resources, max int
		wantReleased          int // task locks released whole, with their resources
		wantGuard             bool
	}{
		{"limit between two tasks", 3, 2, 6, 2, true},      // 3 holdings a task: 2 tasks fit in 6
		{"limit inside the second task", 3, 2, 5, 1, true}, // the second task would be split
		{"limit inside the first task: it goes alone", 2, 4, 2, 1, true},
		{"everything fits", 2, 2, 6, 2, false},
		{"zero releases nothing", 2, 2, 0, 0, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := jtNewWorld()
			dead := w.worker("1@dead", time.Hour)
			for i := range tc.tasks {
				var reserved []string
				for r := range tc.resources {
					reserved = append(reserved, fmt.Sprintf("R-%d-%d", i, r))
				}
				w.acquire(w.task(StateRunning, dead, reserved...), "1@dead")
			}
			p := DefaultPolicy()
			p.MaxReleases = tc.max
			plan := w.judge(p)
			require.Equal(t, tc.wantGuard, jtHasGuard(plan, "max-releases"), "guards %+v", plan.Guards)
			releasedTasks := map[string]bool{}
			for _, jd := range plan.Holdings {
				if jd.Kind == KindTask && jd.Deferred == "" {
					releasedTasks[jd.Key] = true
				}
			}
			require.Len(t, releasedTasks, tc.wantReleased)
			for _, jd := range plan.Holdings {
				require.Equal(t, ActionRelease, jd.Action)
				if jd.Kind == KindTask {
					continue
				}
				require.NotEmpty(t, jd.Evidence().Via, "%s inherits its task lock's verdict", jd.Key)
				if releasedTasks[jd.Evidence().Via] {
					require.Empty(t, jd.Deferred, "%s goes with its task lock", jd.Key)
				} else {
					require.Equal(t, "max_releases", jd.Deferred, "%s waits with its task lock", jd.Key)
				}
			}
		})
	}
}

// TestJudgeMassDeathGuardCountsRecentDeaths: rows that died long ago one by
// one (a rolling restart's old rows, which pulpcore deletes only every ~17
// minutes) do not trip the guard; most workers dying at once does, and so
// does a fleet with no live worker row however long its rows are dead.
func TestJudgeMassDeathGuardCountsRecentDeaths(t *testing.T) {
	t.Parallel()
	// A row's death is its last heartbeat + ttl + grace (60 s by default).
	death := jtWorkerTTL + DefaultHeartbeatGrace
	cases := []struct {
		name     string
		live     int
		deadAges []time.Duration // heartbeat ages of the dead rows
		trips    bool
	}{
		{"rolling restart: 5 rows dead 5 minutes, 4 live", 4, []time.Duration{5 * time.Minute, 5 * time.Minute, 5 * time.Minute, 5 * time.Minute, 5 * time.Minute}, false},
		{"rolling restart over 17 minutes", 4, []time.Duration{4 * time.Minute, 8 * time.Minute, 12 * time.Minute, 16 * time.Minute, 17 * time.Minute}, false},
		{"sudden death: 5 of 9 died a minute ago", 4, []time.Duration{death + time.Minute, death + time.Minute, death + time.Minute, death + time.Minute, death + time.Minute}, true},
		{"sudden death at the window's edge", 4, []time.Duration{death + MassDeathWindow, death + MassDeathWindow, death + MassDeathWindow, death + MassDeathWindow, death + MassDeathWindow}, true},
		{"just past the window", 4, []time.Duration{death + MassDeathWindow + time.Second, death + MassDeathWindow + time.Second, death + MassDeathWindow + time.Second, death + MassDeathWindow + time.Second, death + MassDeathWindow + time.Second}, false},
		{"recent deaths among old ones: 3 recent of 7 counted", 4, []time.Duration{death + time.Second, death + time.Second, death + time.Second, time.Hour, time.Hour}, false},
		{"recent deaths among old ones: 3 recent of 5 counted", 2, []time.Duration{death + time.Second, death + time.Second, death + time.Second, time.Hour, time.Hour}, true},
		{"no live row: every dead row counts", 0, []time.Duration{time.Hour, 2 * time.Hour, 20 * time.Minute}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := jtNewWorld()
			for i := range tc.live {
				w.worker(fmt.Sprintf("1@new-%d", i), time.Second)
			}
			var dead []Holding
			for i, age := range tc.deadAges {
				owner := fmt.Sprintf("1@old-%d", i)
				row := w.worker(owner, age)
				id := w.task(StateRunning, row, fmt.Sprintf("R-%d", i))
				w.acquire(id, owner)
				dead = append(dead, Holding{Key: TaskKeyPrefix + id, Owner: owner})
			}
			plan := w.judge(DefaultPolicy())
			require.Equal(t, tc.trips, jtHasGuard(plan, "mass-death"), "guards %+v", plan.Guards)
			for _, h := range dead {
				jd := jtHolding(t, plan, h.Key, h.Owner)
				require.Equal(t, VerdictOwnerDead, jd.Verdict)
				if tc.trips {
					require.Equal(t, "mass-death guard", jd.Deferred)
				} else {
					require.Empty(t, jd.Deferred)
				}
			}
			for _, tj := range plan.Tasks {
				require.Equal(t, VerdictLost, tj.Verdict)
				require.Equal(t, tc.trips, tj.Deferred == "mass-death guard")
			}
		})
	}
}
