package reaper

import (
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// unprotectedVerdict is the agreed task verdict of an unprotected task
// (docs/verdicts.md).
const unprotectedVerdict Verdict = "unprotected"

// TestRunningTaskWhoseLockWasDeleted: Redis lost every lock of a running
// task (a restart without persistence), and another worker has since taken
// one of its resources. A real pass writes nothing at all, reports the task
// as unprotected if at all, and explain shows the condition: the unguarded
// resources and the other holder.
func TestRunningTaskWhoseLockWasDeleted(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	w1 := f.worker("1@live", time.Second)
	w2 := f.worker("2@live", time.Second)
	repo, domain := "prn:rpm.rpmrepository:"+newUUID(), "prn:core.domain:"+newUUID()
	lost := f.task(StateRunning, w1, []string{repo, "shared:" + domain}, -1)
	other := f.task(StateRunning, w2, []string{repo}, -1)
	f.acquire("2@live", other, []string{repo}, false)

	before := f.keyspace()
	r := f.reaper(nil)
	rep := f.pass(r, ModeOnce)
	require.Zero(t, rep.Summary.Released)
	require.Zero(t, rep.Summary.TasksUpdated)
	require.Zero(t, rep.Summary.Suspects)
	require.Equal(t, before, f.keyspace(), "the pass wrote nothing to Redis")
	state, appLock, reason, finished := f.taskRow(lost)
	require.Equal(t, StateRunning, state)
	require.Equal(t, w1, *appLock)
	require.Nil(t, reason)
	require.Nil(t, finished)
	if tf := taskFindingFor(rep, lost); tf != nil {
		require.Equal(t, unprotectedVerdict, tf.Verdict, "the only task verdict such a task may get")
		require.NotEqual(t, ResultUpdated, tf.Result)
	}

	in, err := r.Inspect(f.ctx, InspectOptions{TaskID: lost})
	require.NoError(t, err)
	ex := Explain(in, lost)
	require.Equal(t, StatusUnprotected, ex.Status, ex.Conclusion)
	require.NotNil(t, ex.Unprotected)
	require.Equal(t, []string{repo, domain}, ex.Unprotected.Unguarded)
	require.Len(t, ex.Unprotected.OtherHolders, 1)
	require.Equal(t, "2@live", ex.Unprotected.OtherHolders[0].Owner)
	require.Contains(t, ex.Conclusion, "unprotected: running on live worker 1@live")
	require.Contains(t, ex.Conclusion, "its task lock task:"+lost+" is absent from Redis")
	require.Contains(t, ex.Conclusion, "2 of its 2 resources are unguarded")
	require.Contains(t, ex.Conclusion, "also held: "+ResourceKeyPrefix+repo+" exclusive by 2@live")

	// A registry-only read cannot tell a lock is absent: no claim then.
	in, err = r.Inspect(f.ctx, InspectOptions{TaskID: lost, RegistryOnly: true})
	require.NoError(t, err)
	require.NotEqual(t, StatusUnprotected, Explain(in, lost).Status)

	// The other task holds its lock: it is not unprotected.
	in, err = r.Inspect(f.ctx, InspectOptions{TaskID: other})
	require.NoError(t, err)
	require.Equal(t, StatusRunning, Explain(in, other).Status)
}

// keyspace is every key of the test's Redis database with its type.
func (f *fixture) keyspace() []string {
	f.t.Helper()
	keys, err := f.redis.Client.Keys(f.ctx, "*").Result()
	require.NoError(f.t, err)
	out := make([]string, 0, len(keys))
	for _, k := range keys {
		typ, err := f.redis.Client.Type(f.ctx, k).Result()
		require.NoError(f.t, err)
		out = append(out, k+" "+typ+" "+f.get(k)+" "+joinSorted(f.members(k)))
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
