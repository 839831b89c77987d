package reaper_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/heartbeat"
	"github.com/lock-reaper/lock-reaper/internal/exitcode"
	"github.com/lock-reaper/lock-reaper/internal/testing/passtest"
	"github.com/lock-reaper/lock-reaper/reaper"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
	"github.com/lock-reaper/lock-reaper/reaper/redislocks"
)

// TestJudgeOwnerRelease checks the plan of a break-glass release on pure
// snapshots: only the owner's holdings and the tasks of its rows, all
// released or updated whatever the heartbeat says, the real heartbeat age in
// the evidence, suspects kept as they were.
func TestJudgeOwnerRelease(t *testing.T) {
	t.Parallel()
	w := passtest.NewWorld(reaper.DefaultConfig().Policy)
	target := w.Worker("1@target", 40*time.Second) // late: a normal pass leaves it alone
	other := w.Worker("2@dead", time.Hour)
	w.Worker("3@dead", time.Hour)
	w.Worker("1@live", time.Second)

	running := w.Task("", judge.StateRunning, target, passtest.WorldRepo)
	w.Hold("1@target", running, passtest.WorldRepo, "shared:"+passtest.Domain)
	waiting := w.Task("", judge.StateWaiting, target)
	w.Hold("1@target", waiting)
	justDone := w.Task("", judge.StateCompleted, target, "shared:"+passtest.Domain)
	w.FinishedAgo(justDone, time.Second)
	w.Hold("1@target", justDone)
	// A waiting task claimed by the owner whose task key another owner holds:
	// requeuing it would leave that lock in its next worker's way.
	crossed := w.Task("", judge.StateWaiting, target)
	w.Hold("2@dead", crossed)
	othersTask := w.Task("", judge.StateRunning, other, "shared:"+passtest.Domain)
	w.Hold("2@dead", othersTask, "shared:"+passtest.Domain)
	suspect := judge.SuspectKey{Key: "pulp:resource_lock:x", Owner: "1@live"}
	w.Snap.Suspects[suspect] = judge.Suspect{Verdict: judge.VerdictNoTask, FirstSeen: passtest.WorldNow.Add(-time.Minute)}

	plan := judge.OwnerRelease(w.Snap, w.Policy, "1@target")
	require.Empty(t, plan.Guards, "the mass-death guard does not apply to one named owner")
	require.Len(t, plan.Holdings, 5)
	for _, jd := range plan.Holdings {
		require.Equal(t, "1@target", jd.Owner)
		require.Equal(t, judge.ActionRelease, jd.Action, jd.Key)
		require.Empty(t, jd.Deferred, jd.Key)
		require.Equal(t, heartbeat.Dead, jd.Evidence().OwnerLiveness)
		require.Equal(t, judge.Duration(40*time.Second), *jd.Evidence().HeartbeatAge, "the real heartbeat age is reported")
		if jd.Key == judge.TaskKeyPrefix+justDone {
			require.Equal(t, judge.VerdictOwnerDead, jd.Verdict, "a lock the pass would keep a moment longer goes too")
		}
	}
	byID := map[string]judge.TaskJudgement{}
	for _, tj := range plan.Tasks {
		byID[tj.ID] = tj
	}
	require.Len(t, byID, 3)
	require.Equal(t, judge.VerdictLost, byID[running].Verdict)
	require.Equal(t, judge.StateCanceled, byID[running].StateAfter)
	require.Empty(t, byID[running].Deferred)
	require.Equal(t, judge.VerdictOrphanedClaim, byID[waiting].Verdict)
	require.True(t, byID[waiting].ClearClaim)
	require.Empty(t, byID[waiting].Deferred)
	require.Equal(t, judge.DeferredOtherTaskKey, byID[crossed].Deferred)
	require.Equal(t, map[judge.SuspectKey]judge.Suspect{suspect: w.Snap.Suspects[suspect]}, plan.Suspects)
	require.Len(t, plan.FleetOwners, 1)
	require.Equal(t, 40*time.Second, plan.FleetOwners[0].HeartbeatAge)

	// The same snapshot judged normally keeps the late owner's locks.
	for _, jd := range judge.All(w.Snap, w.Policy).Holdings {
		if jd.Owner == "1@target" {
			require.NotEqual(t, judge.ActionRelease, jd.Action, jd.Key)
		}
	}
}

func TestJudgeOwnerReleaseAliveOwner(t *testing.T) {
	t.Parallel()
	w := passtest.NewWorld(reaper.DefaultConfig().Policy)
	live := w.Worker("1@live", time.Second)
	running := w.Task("", judge.StateRunning, live, passtest.WorldRepo)
	w.Hold("1@live", running, passtest.WorldRepo)

	stray := "pulp:resource_lock:stray"
	w.Snap.Holdings = append(w.Snap.Holdings, judge.Holding{Key: stray, Kind: judge.KindExclusive, Owner: "1@live"})
	leaked := w.ID()
	w.Hold("1@live", leaked) // no task row: task-missing, a suspect

	plan := judge.OwnerRelease(w.Snap, w.Policy, "1@live")
	require.Len(t, plan.Guards, 1)
	require.Equal(t, "alive-owner", plan.Guards[0].Name)
	require.Contains(t, reaper.GuardReason(plan.Guards[0]), "1@live has an online AppStatus row (heartbeat 1s ago)")
	require.Len(t, plan.Holdings, 4, "the owner's holdings as a normal pass judges them")
	for _, jd := range plan.Holdings {
		require.NotEqual(t, judge.ActionSuspect, jd.Action, "a refused release remembers nothing")
		if jd.Action == judge.ActionRelease {
			require.Equal(t, judge.DeferredAliveOwner, jd.Deferred, jd.Key)
		}
		require.Equal(t, heartbeat.Alive, jd.Evidence().OwnerLiveness)
		if jd.Key == judge.TaskKeyPrefix+running {
			require.Equal(t, judge.VerdictHealthy, jd.Verdict)
		}
	}
	require.Empty(t, plan.Tasks, "a task running on a live worker is not lost")
	require.Empty(t, plan.Suspects)

	forced := w.Policy
	forced.Force = true
	plan = judge.OwnerRelease(w.Snap, forced, "1@live")
	require.Empty(t, plan.Guards)
	for _, jd := range plan.Holdings {
		require.Equal(t, judge.ActionRelease, jd.Action)
		require.Equal(t, judge.VerdictOwnerDead, jd.Verdict)
		require.Empty(t, jd.Deferred)
	}
	require.Len(t, plan.Holdings, 4)
	require.Len(t, plan.Tasks, 1)
	require.Equal(t, running, plan.Tasks[0].ID)
	require.Equal(t, judge.VerdictLost, plan.Tasks[0].Verdict)
	require.Empty(t, plan.Tasks[0].Deferred)
}

func TestJudgeOwnerReleaseLimits(t *testing.T) {
	t.Parallel()
	w := passtest.NewWorld(reaper.DefaultConfig().Policy)
	dead := w.Worker("1@dead", time.Hour)
	for range 3 {
		w.Hold("1@dead", w.Task("", judge.StateRunning, dead))
	}
	w.Worker("2@dead", time.Hour)
	w.Hold("2@dead", w.Task("", judge.StateCompleted, ""))
	w.Policy.MaxReleases, w.Policy.MaxTaskUpdates = 2, 1

	plan := judge.OwnerRelease(w.Snap, w.Policy, "1@dead")
	releases, deferred := 0, 0
	for _, jd := range plan.Holdings {
		if jd.Deferred == "" {
			releases++
		} else {
			deferred++
			require.Equal(t, "max_releases", jd.Deferred)
		}
	}
	require.Equal(t, 2, releases, "the other owner's release does not use up the limit")
	require.Equal(t, 1, deferred)
	updates := 0
	for _, tj := range plan.Tasks {
		if tj.Deferred == "" {
			updates++
		}
	}
	require.Equal(t, 1, updates)
	names := []string{}
	for _, g := range plan.Guards {
		names = append(names, g.Name)
	}
	require.Equal(t, []string{"max-releases", "max-task-updates"}, names)

	// An owner nobody knows: nothing to do.
	plan = judge.OwnerRelease(w.Snap, w.Policy, "7@nobody")
	require.Empty(t, plan.Holdings)
	require.Empty(t, plan.Tasks)
	require.Empty(t, plan.Guards)
}

// TestReleaseOwnerPass runs the break-glass release for real: everything of
// the named owner goes and its tasks are handled as for a dead worker, while
// another dead owner and a live one are untouched, although the fleet is
// dead enough for the mass-death guard to stop a normal pass.
func TestReleaseOwnerPass(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	// Both died a minute ago: recent deaths, which the guard counts.
	target := f.Worker("1@target", 2*time.Minute)
	other := f.Worker("2@dead", 2*time.Minute)
	live := f.Worker("1@live", time.Second)

	rRun, rWait, rDone, rOther, rLive := repo(), repo(), repo(), repo(), repo()
	running := f.Task("running", target, []string{rRun, "shared:" + domain}, -1)
	f.Acquire("1@target", running, []string{rRun, "shared:" + domain}, false)
	waiting := f.Task("waiting", target, []string{rWait}, -1)
	f.Acquire("1@target", waiting, []string{rWait}, true)
	done := f.Task("completed", target, []string{rDone}, time.Hour)
	f.Acquire("1@target", done, []string{rDone}, false)
	othersTask := f.Task("running", other, []string{rOther, "shared:" + domain}, -1)
	f.Acquire("2@dead", othersTask, []string{rOther, "shared:" + domain}, false)
	healthy := f.Task("running", live, []string{rLive, "shared:" + domain}, -1)
	f.Acquire("1@live", healthy, []string{rLive, "shared:" + domain}, false)

	r := f.reaper(nil)
	require.Equal(t, exitcode.Guarded, exitcode.Of(f.pass(r, reaper.ModeAudit)), "2 of 3 workers dead trips the mass-death guard of a normal pass")

	dry, err := r.RunOnce(f.Ctx, reaper.Options{Mode: reaper.ModeAudit, ReleaseOwner: "1@target"})
	require.NoError(t, err)
	require.Equal(t, exitcode.Findings, exitcode.Of(dry))
	require.Equal(t, "1@target", f.Get(judge.TaskKeyPrefix+running), "a dry run writes nothing")

	rep, err := r.RunOnce(f.Ctx, reaper.Options{Mode: reaper.ModeRelease, ReleaseOwner: "1@target"})
	require.NoError(t, err)
	require.Equal(t, reaper.ModeRelease, rep.Mode)
	require.Equal(t, exitcode.OK, exitcode.Of(rep), "%+v", rep.Guards)
	require.Equal(t, 7, rep.Summary.Released)
	require.Equal(t, 2, rep.Summary.TasksUpdated)
	for _, fd := range rep.Findings {
		require.Equal(t, "1@target", fd.Owner)
	}

	for _, id := range []string{running, waiting, done} {
		require.Empty(t, f.Get(judge.TaskKeyPrefix+id))
	}
	for _, r := range []string{rRun, rWait, rDone} {
		require.Empty(t, f.Get(judge.ResourceKeyPrefix+r))
	}
	require.ElementsMatch(t, []string{"2@dead", "1@live"}, f.Members(judge.ResourceKeyPrefix+domain))
	require.Empty(t, f.Members(redislocks.OwnerLocksPrefix+"1@target"))
	require.NotContains(t, f.Members(redislocks.ActiveOwnersKey), "1@target")
	require.Equal(t, "2@dead", f.Get(judge.TaskKeyPrefix+othersTask), "another dead owner is not this release's")
	require.Equal(t, "2@dead", f.Get(judge.ResourceKeyPrefix+rOther))
	require.Equal(t, "1@live", f.Get(judge.TaskKeyPrefix+healthy))

	state, _, reason, _ := f.TaskRow(running)
	require.Equal(t, "canceled", state)
	require.Equal(t, "Worker 1@target has gone missing; lock reaper canceled.", *reason)
	state, lock, _, _ := f.TaskRow(waiting)
	require.Equal(t, "waiting", state)
	require.Nil(t, lock, "requeued")
	state, _, _, _ = f.TaskRow(done)
	require.Equal(t, "completed", state)
	state, _, _, _ = f.TaskRow(othersTask)
	require.Equal(t, "running", state)
	state, _, _, _ = f.TaskRow(healthy)
	require.Equal(t, "running", state)
}

// TestReleaseOwnerPassAliveOwner: an owner with an online row is refused
// unless forced, by the pass itself.
func TestReleaseOwnerPassAliveOwner(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	live := f.Worker("1@live", time.Second)
	rLive := repo()
	healthy := f.Task("running", live, []string{rLive}, -1)
	f.Acquire("1@live", healthy, []string{rLive}, false)

	rep, err := f.reaper(nil).RunOnce(f.Ctx, reaper.Options{Mode: reaper.ModeRelease, ReleaseOwner: "1@live"})
	require.NoError(t, err)
	require.Equal(t, exitcode.Guarded, exitcode.Of(rep))
	require.Equal(t, "alive-owner", rep.Guards[0].Name)
	require.Equal(t, 0, rep.Summary.Released)
	require.Equal(t, "1@live", f.Get(judge.TaskKeyPrefix+healthy))
	state, _, _, _ := f.TaskRow(healthy)
	require.Equal(t, "running", state)

	rep, err = f.reaper(func(c *reaper.Config) { c.Force = true }).RunOnce(f.Ctx, reaper.Options{Mode: reaper.ModeRelease, ReleaseOwner: "1@live"})
	require.NoError(t, err)
	require.Equal(t, exitcode.OK, exitcode.Of(rep))
	require.Equal(t, 2, rep.Summary.Released)
	require.Empty(t, f.Get(judge.TaskKeyPrefix+healthy))
	state, _, _, _ = f.TaskRow(healthy)
	require.Equal(t, "canceled", state)
}

// TestJudgeOwnerReleaseImmediateOwner: an immediate-<uuid> owner has no row;
// naming it releases its locks although its task is incomplete.
func TestJudgeOwnerReleaseImmediateOwner(t *testing.T) {
	t.Parallel()
	w := passtest.NewWorld(reaper.DefaultConfig().Policy)
	id := w.Task("", judge.StateRunning, "", passtest.WorldRepo)
	owner := "immediate-" + id
	w.Hold(owner, id, passtest.WorldRepo)
	require.Equal(t, judge.VerdictHealthy, judge.All(w.Snap, w.Policy).Holdings[0].Verdict)

	plan := judge.OwnerRelease(w.Snap, w.Policy, owner)
	require.Empty(t, plan.Guards)
	require.Len(t, plan.Holdings, 2)
	for _, jd := range plan.Holdings {
		require.Equal(t, judge.VerdictOwnerDead, jd.Verdict)
		require.Equal(t, judge.ActionRelease, jd.Action)
		require.Equal(t, heartbeat.Dead, jd.Evidence().OwnerLiveness, "so that its empty registry is retired")
	}
	require.Empty(t, plan.Tasks, "it has no row, so no task is claimed by it")
}
