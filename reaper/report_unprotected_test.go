package reaper_test

import (
	"sort"
	"testing"
	"time"

	"github.com/lock-reaper/lock-reaper/internal/exitcode"
	"github.com/lock-reaper/lock-reaper/internal/explain"
	"github.com/lock-reaper/lock-reaper/internal/sim"
	"github.com/lock-reaper/lock-reaper/reaper"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
	"github.com/lock-reaper/lock-reaper/reaper/pulpdb"
	"github.com/lock-reaper/lock-reaper/reaper/redislocks"
	"github.com/stretchr/testify/require"
)

// TestUnprotectedTaskReportedNothingWritten: a running task of a live worker
// whose task lock was deleted (a Redis restart, an eviction) is reported as
// unprotected, with the other holder of its resource; nothing is written
// for it, and it is no work for audit's exit code.
func TestUnprotectedTaskReportedNothingWritten(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	r := repo()
	task := f.Task(judge.StateRunning, f.Worker("1@live", time.Second), []string{r}, -1)
	other := f.Task(judge.StateRunning, f.Worker("2@other", time.Second), []string{r}, -1)
	f.Acquire("2@other", other, []string{r}, false)

	dbBefore := f.dbState()
	audit := f.pass(f.reaper(nil), reaper.ModeAudit)
	require.Equal(t, exitcode.OK, exitcode.Of(audit), "an unprotected task is reported, not work to do")
	for _, rep := range []*reaper.Report{audit, f.pass(f.reaper(nil), reaper.ModeOnce)} {
		require.Len(t, rep.Tasks, 1)
		tf := rep.Tasks[0]
		require.Equal(t, task, tf.ID)
		require.Equal(t, judge.VerdictUnprotected, tf.Verdict)
		require.Equal(t, judge.ActionReport, tf.Action)
		require.Equal(t, reaper.ResultReported, tf.Result)
		require.Equal(t, []reaper.UnguardedResource{{Resource: r, Need: judge.KindExclusive, OtherHolders: []reaper.ResourceHolder{{Owner: "2@other", Kind: judge.KindExclusive}}}}, tf.Resources)
		require.Zero(t, rep.Summary.TasksUpdated)
	}
	require.Equal(t, dbBefore, f.dbState(), "nothing written to the database")
	require.Equal(t, "2@other", f.Get(judge.ResourceKeyPrefix+r), "the other holder is left alone")
	require.Empty(t, f.Get(judge.TaskKeyPrefix+task), "no lock written on the task's behalf")
}

// TestRunningTaskWhoseLockWasDeleted: Redis lost every lock of a running
// task (a restart without persistence), and another worker has since taken
// one of its resources. A real pass writes nothing at all, reports the task
// as unprotected if at all, and explain shows the condition: the unguarded
// resources and the other holder.
func TestRunningTaskWhoseLockWasDeleted(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	w1 := f.Worker("1@live", time.Second)
	w2 := f.Worker("2@live", time.Second)
	repo, domain := "prn:rpm.rpmrepository:"+sim.NewUUID(), "prn:core.domain:"+sim.NewUUID()
	lost := f.Task(judge.StateRunning, w1, []string{repo, "shared:" + domain}, -1)
	other := f.Task(judge.StateRunning, w2, []string{repo}, -1)
	f.Acquire("2@live", other, []string{repo}, false)

	before := f.keyspace()
	r := f.reaper(nil)
	rep := f.pass(r, reaper.ModeOnce)
	require.Zero(t, rep.Summary.Released)
	require.Zero(t, rep.Summary.TasksUpdated)
	require.Zero(t, rep.Summary.Suspects)
	require.Equal(t, before, f.keyspace(), "the pass wrote nothing to Redis")
	state, appLock, reason, finished := f.TaskRow(lost)
	require.Equal(t, judge.StateRunning, state)
	require.Equal(t, w1, *appLock)
	require.Nil(t, reason)
	require.Nil(t, finished)
	tf := taskFindingFor(rep, lost)
	require.NotNil(t, tf, "the task is reported")
	require.Equal(t, judge.VerdictUnprotected, tf.Verdict, "the only task verdict such a task may get")
	require.NotEqual(t, reaper.ResultUpdated, tf.Result)

	in, err := r.Inspect(f.Ctx, reaper.InspectOptions{TaskID: lost})
	require.NoError(t, err)
	ex := explain.Explain(in, lost)
	require.Equal(t, explain.StatusUnprotected, ex.Status, ex.Conclusion)
	require.NotNil(t, ex.Unprotected)
	require.Equal(t, []string{repo, domain}, ex.Unprotected.Unguarded)
	require.Len(t, ex.Unprotected.OtherHolders, 1)
	require.Equal(t, "2@live", ex.Unprotected.OtherHolders[0].Owner)
	require.Contains(t, ex.Conclusion, "unprotected: running on live worker 1@live")
	require.Contains(t, ex.Conclusion, "its task lock task:"+lost+" is absent from Redis")
	require.Contains(t, ex.Conclusion, "2 of its 2 resources are unguarded")
	require.Contains(t, ex.Conclusion, "also held: "+judge.ResourceKeyPrefix+repo+" exclusive by 2@live")

	// A registry-only read cannot tell a lock is absent: no claim then.
	in, err = r.Inspect(f.Ctx, reaper.InspectOptions{TaskID: lost, RegistryOnly: true})
	require.NoError(t, err)
	require.NotEqual(t, explain.StatusUnprotected, explain.Explain(in, lost).Status)

	// The other task holds its lock: it is not unprotected.
	in, err = r.Inspect(f.Ctx, reaper.InspectOptions{TaskID: other})
	require.NoError(t, err)
	require.Equal(t, explain.StatusRunning, explain.Explain(in, other).Status)
}

// keyspace is every key of the test's Redis database with its type, but
// for the mass-death guard's memory of live rows, which every pass writes,
// and the record of the primary whose cancel signals were checked, which
// the first pass on a primary writes.
func (f *fixture) keyspace() []string {
	f.T.Helper()
	keys, err := f.Redis.Client.Keys(f.Ctx, "*").Result()
	require.NoError(f.T, err)
	out := make([]string, 0, len(keys))
	for _, k := range keys {
		if k == redislocks.SeenAliveKey || k == redislocks.SignalsCheckedKey {
			continue
		}
		typ, err := f.Redis.Client.Type(f.Ctx, k).Result()
		require.NoError(f.T, err)
		out = append(out, k+" "+typ+" "+f.Get(k)+" "+joinSorted(f.Members(k)))
	}
	sort.Strings(out)
	return out
}

func joinSorted(s []string) string {
	sort.Strings(s)
	out := ""
	for _, v := range s {
		out += v + ","
	}
	return out
}

// TestTaskLockGoneKeepsRunningTasksResources is issue 21's first case: a
// live worker runs T holding task:<T>, the exclusive repository and the
// shared domain; only task:<T> vanishes (an eviction, a failover that lost
// one write, an operator's DEL). T's row still says the worker runs it and
// reserves both, so both holdings stay, justified by T, across passes long
// past confirm_after; T is reported unprotected and nothing is written.
func TestTaskLockGoneKeepsRunningTasksResources(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	w := f.Worker("1@live", time.Second)
	repo, domain := "prn:rpm.rpmrepository:"+sim.NewUUID(), "prn:core.domain:"+sim.NewUUID()
	task := f.Task(judge.StateRunning, w, []string{repo, "shared:" + domain}, -1)
	f.Acquire("1@live", task, []string{repo, "shared:" + domain}, false)
	require.NoError(t, f.Redis.Client.Del(f.Ctx, judge.TaskKeyPrefix+task).Err())

	before := f.keyspace()
	for round := range 3 {
		rep := f.pass(f.reaper(nil), reaper.ModeOnce)
		require.Zero(t, rep.Summary.Released, "pass %d", round)
		require.Zero(t, rep.Summary.TasksUpdated, "pass %d", round)
		require.Zero(t, rep.Summary.Suspects, "pass %d: nothing to confirm", round)
		require.Nil(t, findingFor(rep, judge.ResourceKeyPrefix+repo, "1@live"), "pass %d: a justified holding is no finding", round)
		tf := taskFindingFor(rep, task)
		require.NotNil(t, tf, "pass %d", round)
		require.Equal(t, judge.VerdictUnprotected, tf.Verdict)
		// Had a suspect been remembered, this would confirm it.
		f.ageSuspects(reaper.DefaultConfig().Policy.ConfirmAfter + time.Minute)
	}
	require.Equal(t, before, f.keyspace(), "both holdings kept, nothing written to Redis")
	require.Equal(t, "1@live", f.Get(judge.ResourceKeyPrefix+repo))
	require.Equal(t, []string{"1@live"}, f.Members(judge.ResourceKeyPrefix+domain))
	state, _, _, _ := f.TaskRow(task)
	require.Equal(t, judge.StateRunning, state)

	// The full listing names T as what keeps them.
	r := f.reaper(nil)
	in, err := r.Inspect(f.Ctx, reaper.InspectOptions{TaskID: task})
	require.NoError(t, err)
	ex := explain.Explain(in, task)
	require.Equal(t, explain.StatusUnprotected, ex.Status, ex.Conclusion)
	for _, key := range []string{judge.ResourceKeyPrefix + repo, judge.ResourceKeyPrefix + domain} {
		var jd *judge.Judgement
		for i := range in.Plan.Holdings {
			if h := &in.Plan.Holdings[i]; h.Key == key && h.Owner == "1@live" {
				jd = h
			}
		}
		require.NotNil(t, jd, key)
		require.Equal(t, judge.VerdictJustified, jd.Verdict, key)
		require.Equal(t, judge.ActionKeep, jd.Action, key)
		require.Equal(t, judge.TaskKeyPrefix+task, jd.Evidence().Via, key)
		require.Equal(t, judge.StateRunning, jd.Evidence().TaskState, key)
	}
}

// TestUnprotectedTaskMissingItsSharedMembership: a running task of a live
// worker holds its task lock and its exclusive resource, but Redis lost its
// membership of the domain's set (an operator's SREM, a lost write), where
// another worker's task is a member. It is reported as unprotected, its
// task lock held, with the domain's other holder; nothing is written, and
// every lock stays.
func TestUnprotectedTaskMissingItsSharedMembership(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	r, d := repo(), "prn:core.domain:"+sim.NewUUID()
	task := f.Task(judge.StateRunning, f.Worker("1@live", time.Second), []string{r, "shared:" + d}, -1)
	f.Acquire("1@live", task, []string{r}, false)
	other := f.Task(judge.StateRunning, f.Worker("2@other", time.Second), []string{"shared:" + d}, -1)
	f.Acquire("2@other", other, []string{"shared:" + d}, false)

	dbBefore := f.dbState()
	audit := f.pass(f.reaper(nil), reaper.ModeAudit)
	require.Equal(t, exitcode.OK, exitcode.Of(audit), "an unprotected task is reported, not work to do")
	for _, rep := range []*reaper.Report{audit, f.pass(f.reaper(nil), reaper.ModeOnce)} {
		require.Empty(t, rep.Findings)
		require.Len(t, rep.Tasks, 1)
		tf := rep.Tasks[0]
		require.Equal(t, task, tf.ID)
		require.Equal(t, judge.VerdictUnprotected, tf.Verdict)
		require.True(t, tf.LockHeld)
		require.Equal(t, reaper.ResultReported, tf.Result)
		require.Equal(t, []reaper.UnguardedResource{
			{Resource: r, Need: judge.KindExclusive, OtherHolders: []reaper.ResourceHolder{}},
			{Resource: d, Need: judge.KindShared, OtherHolders: []reaper.ResourceHolder{{Owner: "2@other", Kind: judge.KindShared}}},
		}, tf.Resources)
		require.Contains(t, pulpdb.TaskReason(tf.TaskJudgement), "holds its lock "+judge.TaskKeyPrefix+task+", but not every resource lock")
	}
	require.Equal(t, dbBefore, f.dbState(), "nothing written to the database")
	require.Equal(t, "1@live", f.Get(judge.TaskKeyPrefix+task))
	require.Equal(t, "1@live", f.Get(judge.ResourceKeyPrefix+r))
	members, err := f.Redis.Client.SMembers(f.Ctx, judge.ResourceKeyPrefix+d).Result()
	require.NoError(t, err)
	require.Equal(t, []string{"2@other"}, members, "no membership written on the task's behalf")

	in, err := f.reaper(nil).Inspect(f.Ctx, reaper.InspectOptions{TaskID: task})
	require.NoError(t, err)
	ex := explain.Explain(in, task)
	require.Equal(t, explain.StatusUnprotected, ex.Status, ex.Conclusion)
	require.Equal(t, []string{d}, ex.Unprotected.Unguarded)
	require.Contains(t, ex.Conclusion, "which holds its task lock task:"+task+" but not every resource lock")
	require.Contains(t, ex.Conclusion, "1 of its 2 resources are unguarded ("+d+")")
}
