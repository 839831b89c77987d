package judge

// Table tests of Judge against verdicts.md: one case per row of every table
// (owner liveness, task locks, resource holdings, confirmation, lost tasks,
// guards). Judge is pure, so these need no services.
//
// Helpers in this file are prefixed with jt so that they cannot collide with
// the helpers of the integration tests that share the package.

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestJudgeMassDeathGuard(t *testing.T) {
	t.Parallel()
	// The fixture adds two rows of its own: a dead "0@retired" only when no
	// worker is dead, and always the task-lost pair "5@reborn" (one alive,
	// one dead; the dead row of a restarted name does not count). Counts
	// below include them.
	// Worker rows and dead ones, counting the fixture's own rows.
	minWorkers := func(n int) func(*Policy) { return func(p *Policy) { p.MinWorkers = n } }
	cases := []struct {
		name          string
		workers, dead int
		policy        func(*Policy)
		trips         bool
	}{
		{"more than half dead trips", 4, 3, nil, true},                                                   // 3 of 5
		{"all dead trips", 3, 3, nil, true},                                                              // 3 of 4
		{"exactly half dead does not trip", 4, 2, nil, false},                                            // 2 of 5
		{"few dead do not trip", 8, 2, nil, false},                                                       // 2 of 9
		{"force disables it", 4, 3, func(p *Policy) { p.Force = true }, false},                           // 3 of 5
		{"fewer than min_workers never trips", 0, 0, minWorkers(4), false},                               // 1 of 2
		{"exactly min_workers trips", 2, 2, minWorkers(3), true},                                         // 2 of 3
		{"max_dead_fraction 0.9", 4, 3, func(p *Policy) { p.MaxDeadFraction = 0.9 }, false},              // 3 of 5
		{"max_dead_fraction 0 trips on any dead", 8, 0, func(p *Policy) { p.MaxDeadFraction = 0 }, true}, // 1 of 10
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g := jtMassDeath(tc.workers, tc.dead)
			p := jtPolicy()
			if tc.policy != nil {
				tc.policy(&p)
			}
			plan := g.w.judge(p)
			require.Equal(t, tc.trips, jtHasGuard(plan, "mass-death"), "guards %+v", plan.Guards)

			deadGrounds := []Holding{g.ownerDead, g.ownerDeadResource, g.taskLost, g.taskLostResource}
			wantVerdicts := []Verdict{VerdictOwnerDead, VerdictOwnerDead, VerdictTaskLost, VerdictTaskLost}
			for i, h := range deadGrounds {
				jd := jtHolding(t, plan, h.Key, h.Owner)
				require.Equal(t, wantVerdicts[i], jd.Verdict, h.Key)
				require.Equal(t, ActionRelease, jd.Action, h.Key)
				if tc.trips {
					require.Equal(t, "mass-death guard", jd.Deferred, h.Key)
				} else {
					require.Empty(t, jd.Deferred, h.Key)
				}
			}
			// Other grounds still release.
			for _, h := range []Holding{g.ownerGone, g.finished, g.confirmedLeak} {
				jd := jtHolding(t, plan, h.Key, h.Owner)
				require.Equal(t, ActionRelease, jd.Action, h.Key)
				require.Empty(t, jd.Deferred, h.Key)
			}
			require.Equal(t, VerdictOwnerGone, jtHolding(t, plan, g.ownerGone.Key, g.ownerGone.Owner).Verdict)
			require.Equal(t, VerdictTaskFinished, jtHolding(t, plan, g.finished.Key, g.finished.Owner).Verdict)
			require.Equal(t, VerdictNoTask, jtHolding(t, plan, g.confirmedLeak.Key, g.confirmedLeak.Owner).Verdict)

			// Every task update is held back.
			for _, id := range []string{g.lost, g.orphaned} {
				tj, ok := jtTask(plan, id)
				require.True(t, ok, id)
				require.Equal(t, ActionUpdate, tj.Action)
				if tc.trips {
					require.Equal(t, "mass-death guard", tj.Deferred)
				} else {
					require.Empty(t, tj.Deferred)
				}
			}
		})
	}
}

func TestJudgeMassDeathGuardReason(t *testing.T) {
	t.Parallel()
	g := jtMassDeath(4, 3)
	plan := g.w.judge(jtPolicy())
	require.Len(t, plan.Guards, 1)
	require.Equal(t, "mass-death", plan.Guards[0].Name)
	guard := plan.Guards[0]
	require.Equal(t, 5, guard.Count.Workers)
	require.Equal(t, 3, guard.Count.Dead)
	require.Equal(t, 0.5, guard.MaxDeadFraction)
}

// A stuck-claim suspect is no update, so the guard has nothing to defer.
func TestJudgeMassDeathGuardLeavesSuspectsAlone(t *testing.T) {
	t.Parallel()
	w := jtNewWorld()
	for i := range 3 {
		w.worker(fmt.Sprintf("%d@dead", i), jtRecentlyDead)
	}
	live := w.worker("1@live", time.Second)
	id := w.task(StateWaiting, live)
	plan := w.judge(jtPolicy())
	require.True(t, jtHasGuard(plan, "mass-death"))
	tj, ok := jtTask(plan, id)
	require.True(t, ok)
	require.Equal(t, ActionSuspect, tj.Action)
	require.Empty(t, tj.Deferred)
}

func TestJudgeNoWorkersNoGuard(t *testing.T) {
	t.Parallel()
	p := jtPolicy()
	p.MinWorkers = 0
	w := jtNewWorld()
	w.row("1@api", "api", jtAPITTL, time.Hour)
	plan := w.judge(p)
	require.Empty(t, plan.Guards)
}

func TestJudgeMaxReleases(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name        string
		releasable  int
		max         int
		wantGuard   bool
		wantHeldBck int
	}{
		{"under the limit", 3, 5, false, 0},
		{"exactly the limit", 5, 5, false, 0},
		{"over the limit", 7, 5, true, 2},
		{"zero", 3, 0, true, 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := jtNewWorld()
			w.worker("1@w", time.Second)
			for i := range tc.releasable {
				w.resource(fmt.Sprintf("R%02d", i), KindExclusive, "9@gone")
			}
			// Kept and suspect holdings do not count.
			w.resource("S", KindExclusive, "1@w")
			p := jtPolicy()
			p.MaxReleases = tc.max
			plan := w.judge(p)
			require.Equal(t, tc.wantGuard, jtHasGuard(plan, "max-releases"))
			released, held := 0, 0
			for i, jd := range plan.Holdings {
				if jd.Action != ActionRelease {
					require.Empty(t, jd.Deferred)
					continue
				}
				if jd.Deferred == "" {
					released++
					continue
				}
				require.Equal(t, "max_releases", jd.Deferred)
				held++
				// Held back are the last ones in plan order.
				for _, later := range plan.Holdings[i:] {
					if later.Action == ActionRelease {
						require.NotEmpty(t, later.Deferred)
					}
				}
			}
			require.Equal(t, tc.releasable-tc.wantHeldBck, released)
			require.Equal(t, tc.wantHeldBck, held)
		})
	}
}

// Releases the mass-death guard defers do not use up max_releases.
func TestJudgeMaxReleasesAfterMassDeath(t *testing.T) {
	t.Parallel()
	g := jtMassDeath(4, 3)
	p := jtPolicy()
	p.MaxReleases = 3
	plan := g.w.judge(p)
	require.True(t, jtHasGuard(plan, "mass-death"))
	require.False(t, jtHasGuard(plan, "max-releases"))
	for _, h := range []Holding{g.ownerGone, g.finished, g.confirmedLeak} {
		require.Empty(t, jtHolding(t, plan, h.Key, h.Owner).Deferred)
	}
}

func TestJudgeMaxTaskUpdates(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		tasks     int
		max       int
		wantGuard bool
		wantHeld  int
	}{
		{"under", 2, 3, false, 0},
		{"exactly", 3, 3, false, 0},
		{"over", 5, 3, true, 2},
		{"zero", 2, 0, true, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := jtNewWorld()
			for range tc.tasks {
				w.task(StateRunning, "")
			}
			// A stuck-claim suspect is no update and does not count.
			w.task(StateWaiting, w.worker("1@w", time.Second))
			p := jtPolicy()
			p.MaxTaskUpdates = tc.max
			plan := w.judge(p)
			require.Equal(t, tc.wantGuard, jtHasGuard(plan, "max-task-updates"))
			updated, held := 0, 0
			for _, tj := range plan.Tasks {
				switch {
				case tj.Action != ActionUpdate:
					require.Empty(t, tj.Deferred)
				case tj.Deferred == "":
					require.Zero(t, held, "held-back updates come last")
					updated++
				default:
					require.Equal(t, "max_task_updates", tj.Deferred)
					held++
				}
			}
			require.Equal(t, tc.tasks-tc.wantHeld, updated)
			require.Equal(t, tc.wantHeld, held)
		})
	}
}

// ---------------------------------------------------------------------------
// Plan shape
