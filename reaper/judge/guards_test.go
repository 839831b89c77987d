package judge

import (
	"fmt"
	"testing"
	"time"

	"github.com/lock-reaper/lock-reaper/heartbeat"
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
			p := jtPolicy()
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
	death := jtWorkerTTL + jtHeartbeatGrace
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
			plan := w.judge(jtPolicy())
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

// TestMassDeathCountsAs: the guard's rule for one worker row, with and
// without its memory of rows seen alive.
func TestMassDeathCountsAs(t *testing.T) {
	t.Parallel()
	w := MassDeathWindow
	cases := []struct {
		name          string
		row           heartbeat.WorkerRow
		seen, anyLive bool
		want          massDeathRowCount
	}{
		{"live", heartbeat.WorkerRow{Live: true}, false, true, countedLive},
		{"live, remembered", heartbeat.WorkerRow{Live: true}, true, true, countedLive},
		{"restarted under its name", heartbeat.WorkerRow{Superseded: true, DeadFor: time.Second}, true, true, notCounted},
		{"died within the window", heartbeat.WorkerRow{DeadFor: w}, false, true, countedRecent},
		{"died within the window, remembered", heartbeat.WorkerRow{DeadFor: time.Minute}, true, true, countedRecent},
		{"dead past the window, no pass saw it alive (a rolling restart's)", heartbeat.WorkerRow{DeadFor: w + time.Second}, false, true, notCounted},
		{"dead past the window, seen alive", heartbeat.WorkerRow{DeadFor: w + time.Second}, true, true, countedRemembered},
		{"dead 23 hours, seen alive", heartbeat.WorkerRow{DeadFor: 23 * time.Hour}, true, true, countedRemembered},
		{"dead past the window, seen alive, death proven by its pod", heartbeat.WorkerRow{DeadFor: w + time.Second, PodProven: true}, true, true, notCounted},
		{"proven by its pod, within the window: pods never lift the guard", heartbeat.WorkerRow{DeadFor: time.Second, PodProven: true}, true, true, countedRecent},
		{"no worker lives: every dead row counts", heartbeat.WorkerRow{DeadFor: time.Hour}, false, false, countedRecent},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, massDeathCountsAs(tc.row, tc.seen, tc.anyLive, w))
		})
	}
}

// TestMassDeathRememberAlive: what the guard remembers after a pass.
func TestMassDeathRememberAlive(t *testing.T) {
	t.Parallel()
	before := jtNow.Add(-20 * time.Minute)
	seen := map[string]SeenAlive{
		"dead-seen": {Name: "1@a", At: before}, "proven": {Name: "1@b", At: before},
		"restarted": {Name: "1@c", At: before}, "deleted": {Name: "1@d", At: before},
		"live": {Name: "1@e", At: before},
	}
	rows := []heartbeat.WorkerRow{
		{ID: "live", Name: "1@e", Live: true},
		{ID: "new", Name: "1@f", Live: true},
		{ID: "dead-seen", Name: "1@a", DeadFor: time.Hour},
		{ID: "proven", Name: "1@b", DeadFor: time.Hour, PodProven: true},
		{ID: "restarted", Name: "1@c", DeadFor: time.Hour, Superseded: true},
		{ID: "dying", Name: "1@g", DeadFor: time.Minute},
		{ID: "long-dead", Name: "1@h", DeadFor: time.Hour},
	}
	require.Equal(t, map[string]SeenAlive{
		"live": {Name: "1@e", At: jtNow}, "new": {Name: "1@f", At: jtNow},
		"dead-seen": {Name: "1@a", At: before}, "dying": {Name: "1@g", At: jtNow},
	}, RememberAlive(rows, seen, jtNow, MassDeathWindow, false))
	require.Equal(t, map[string]SeenAlive{
		"live": {Name: "1@e", At: jtNow}, "new": {Name: "1@f", At: jtNow},
	}, RememberAlive(rows, seen, jtNow, MassDeathWindow, true), "--force forgets the dead")
}

// TestJudgeMassDeathGuardRemembers: 4 of 5 workers stopped heartbeating
// while one goes on; a pass saw them alive. However far apart the passes,
// the guard holds, and says how long each has been dead; pulpcore deleting
// the rows, or --force, ends it.
func TestJudgeMassDeathGuardRemembers(t *testing.T) {
	t.Parallel()
	death := jtWorkerTTL + jtHeartbeatGrace
	build := func(stoppedFor time.Duration, remembered bool) *jtWorld {
		w := jtNewWorld()
		w.worker("1@live", time.Second)
		for i := range 4 {
			owner := fmt.Sprintf("1@stopped-%d", i)
			row := w.worker(owner, stoppedFor)
			w.acquire(w.task(StateRunning, row, fmt.Sprintf("R-%d", i)), owner)
			if remembered {
				if w.snap.SeenAlive == nil {
					w.snap.SeenAlive = map[string]SeenAlive{}
				}
				w.snap.SeenAlive[row] = SeenAlive{Name: owner, At: jtNow.Add(-stoppedFor)}
			}
		}
		return w
	}
	for _, after := range []time.Duration{120 * time.Second, 230 * time.Second, 250 * time.Second, 300 * time.Second, 20 * time.Minute, 23 * time.Hour} {
		plan := build(after, true).judge(jtPolicy())
		require.True(t, jtHasGuard(plan, "mass-death"), "after %s", after)
		c := plan.Guards[0].Count
		require.Equal(t, []int{5, 4}, []int{c.Workers, c.Dead}, "after %s", after)
		require.Equal(t, []time.Duration{after - death, after - death}, []time.Duration{c.Newest, c.Oldest}, "its real age")
		if after-death > MassDeathWindow {
			require.Equal(t, 4, c.Remembered, "each was seen alive by an earlier pass, after %s", after)
		} else {
			require.Zero(t, c.Remembered, "each died within the window, after %s", after)
		}
		for _, tj := range plan.Tasks {
			require.Equal(t, "mass-death guard", tj.Deferred)
		}
		require.Len(t, plan.SeenAlive, 5, "the memory is kept")
		forced := jtPolicy()
		forced.Force = true
		plan = build(after, true).judge(forced)
		require.False(t, jtHasGuard(plan, "mass-death"))
		require.Len(t, plan.SeenAlive, 1, "a forced pass forgets the dead")
	}
	// Without the memory, the window rule alone: a death seen happen is
	// within it, one past it is not counted.
	plan := build(120*time.Second, false).judge(jtPolicy())
	require.True(t, jtHasGuard(plan, "mass-death"))
	require.Zero(t, plan.Guards[0].Count.Remembered, "each died within the window")
	require.Len(t, plan.SeenAlive, 5, "deaths seen happen are remembered")
	require.False(t, jtHasGuard(build(20*time.Minute, false).judge(jtPolicy()), "mass-death"), "a death no pass saw happen")

	// pulpcore deleted the rows: its cleanup judged them missing.
	w := build(20*time.Minute, true)
	seen := w.snap.SeenAlive
	w.snap.AppStatuses = w.snap.AppStatuses[:1]
	plan = w.judge(jtPolicy())
	require.False(t, jtHasGuard(plan, "mass-death"))
	require.Len(t, plan.SeenAlive, 1)
	require.Len(t, seen, 4)
}

// TestMassDeathCountsTheAges: the guard counts the real ages of the deaths,
// not the window (the report words them: reaper.GuardReason).
func TestMassDeathCountsTheAges(t *testing.T) {
	t.Parallel()
	c := CountMassDeath([]heartbeat.WorkerRow{
		{ID: "a", Live: true}, {ID: "b", DeadFor: 30 * time.Second}, {ID: "c", DeadFor: 23 * time.Hour},
	}, map[string]SeenAlive{"c": {Name: "1@c", At: jtNow}}, MassDeathWindow)
	require.Equal(t, MassDeathCount{Workers: 3, Dead: 2, Remembered: 1, Newest: 30 * time.Second, Oldest: 23 * time.Hour}, c)
	c = CountMassDeath([]heartbeat.WorkerRow{{ID: "b", DeadFor: 2 * time.Hour}, {ID: "c", DeadFor: time.Hour}}, nil, MassDeathWindow)
	require.Equal(t, MassDeathCount{Workers: 2, Dead: 2, Newest: time.Hour, Oldest: 2 * time.Hour, NoneLive: true}, c)
}
