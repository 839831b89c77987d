package reaper_test

import (
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/heartbeat"
	"github.com/lock-reaper/lock-reaper/internal/explain"
	"github.com/lock-reaper/lock-reaper/internal/sim"
	"github.com/lock-reaper/lock-reaper/internal/testing/testenv"
	"github.com/lock-reaper/lock-reaper/reaper"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
	"github.com/lock-reaper/lock-reaper/reaper/pulpdb"
	"github.com/lock-reaper/lock-reaper/reaper/redislocks"
)

// createdAgo moves a task's pulp_created back, on the database clock.
func (f *fixture) createdAgo(id string, ago time.Duration) {
	f.T.Helper()
	_, err := f.DB.Pool.Exec(f.Ctx, `UPDATE core_task SET pulp_created = now() - make_interval(secs => $2) WHERE pulp_id = $1`, id, ago.Seconds())
	require.NoError(f.T, err)
}

// redisDump reads every key and its value or members, to prove a read wrote nothing.
func (f *fixture) redisDump() map[string]string {
	f.T.Helper()
	keys, err := f.Redis.Client.Keys(f.Ctx, "*").Result()
	require.NoError(f.T, err)
	out := map[string]string{}
	for _, k := range keys {
		typ, err := f.Redis.Client.Type(f.Ctx, k).Result()
		require.NoError(f.T, err)
		switch typ {
		case "string":
			out[k] = f.Get(k)
		case "set":
			m := f.Members(k)
			sort.Strings(m)
			out[k] = typ + ":" + strings.Join(m, ",")
		default:
			out[k] = typ
		}
	}
	return out
}

// TestInspectReadsWithoutWriting checks that an inspection judges like a
// pass and writes nothing: no lock, no suspect, no task.
func TestInspectReadsWithoutWriting(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	live := f.Worker("1@live", time.Second)
	f.Worker("1@dead", time.Hour)
	r1, r2, r3 := repo(), repo(), repo()
	healthy := f.Task("running", live, []string{r1, "shared:" + domain}, -1)
	f.Acquire("1@live", healthy, []string{r1, "shared:" + domain}, false)
	dead := f.Task("running", "", []string{r2}, -1)
	f.Acquire("1@dead", dead, []string{r2}, true)
	// A no-task suspect: a pass would remember it.
	require.NoError(t, f.Redis.Client.Set(f.Ctx, judge.ResourceKeyPrefix+r3, "1@live", 0).Err())

	before := f.redisDump()
	r := f.reaper(nil)
	in, err := r.Inspect(f.Ctx, reaper.InspectOptions{})
	require.NoError(t, err)
	require.Equal(t, before, f.redisDump(), "an inspection writes nothing to Redis")
	require.NotContains(t, before, redislocks.SuspectsKey)
	state, _, _, _ := f.TaskRow(dead)
	require.Equal(t, "running", state)

	require.Len(t, in.Snapshot.Holdings, 6)
	require.Nil(t, in.Explained)
	want := reaper.DefaultConfig().Policy
	want.HeartbeatRecheck = testenv.HeartbeatRecheck
	require.Equal(t, want, in.Policy)
	verdicts := map[string]judge.Verdict{}
	for _, jd := range in.Plan.Holdings {
		verdicts[jd.Key+" "+jd.Owner] = jd.Verdict
	}
	require.Equal(t, judge.VerdictHealthy, verdicts[judge.TaskKeyPrefix+healthy+" 1@live"])
	require.Equal(t, judge.VerdictJustified, verdicts[judge.ResourceKeyPrefix+r1+" 1@live"])
	require.Equal(t, judge.VerdictOwnerDead, verdicts[judge.TaskKeyPrefix+dead+" 1@dead"])
	require.Equal(t, judge.VerdictNoTask, verdicts[judge.ResourceKeyPrefix+r3+" 1@live"])
	require.Len(t, in.Plan.Tasks, 1, "the dead worker's running task is lost")

	require.Equal(t, heartbeat.Alive, in.Owner("1@live").Liveness)
	require.Equal(t, heartbeat.Dead, in.Owner("1@dead").Liveness)
	require.Equal(t, heartbeat.Gone, in.Owner("7@nobody").Liveness)
	for _, jd := range in.Plan.Holdings {
		if jd.Key == judge.ResourceKeyPrefix+r1 {
			require.Equal(t, healthy, reaper.HoldingTask(&jd.Holding, jd.Evidence().Via), "a justified resource holding names its task")
		}
		if jd.Key == judge.ResourceKeyPrefix+r3 {
			require.Empty(t, reaper.HoldingTask(&jd.Holding, jd.Evidence().Via))
		}
	}
}

// TestInspectExplainedTask checks explain's own read: the task with its
// creation time and exactly the older waiting tasks whose reservations
// conflict with it, oldest first.
func TestInspectExplainedTask(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	r1, r2 := repo(), repo()
	target := f.Task("waiting", "", []string{r1, "shared:" + r2, "shared:" + domain}, -1)
	f.createdAgo(target, time.Minute)

	exclusiveOnR1 := f.Task("waiting", "", []string{r1, "shared:" + domain}, -1)
	f.createdAgo(exclusiveOnR1, 2*time.Minute)
	sharedOnR1 := f.Task("waiting", "", []string{"shared:" + r1}, -1)
	f.createdAgo(sharedOnR1, 3*time.Minute)
	exclusiveOnR2 := f.Task("waiting", "", []string{r2}, -1)
	f.createdAgo(exclusiveOnR2, 4*time.Minute)
	exclusiveDomain := f.Task("waiting", "", []string{domain}, -1)
	f.createdAgo(exclusiveDomain, 5*time.Minute)

	// None of these goes first: running ones hold their locks, which the
	// snapshot shows.
	running := f.Task("running", "", []string{r1}, -1)
	f.createdAgo(running, 5*time.Minute)
	canceling := f.Task("canceling", "", []string{r2}, -1)
	f.createdAgo(canceling, 5*time.Minute)
	sharesOnly := f.Task("waiting", "", []string{"shared:" + r2, "shared:" + domain}, -1)
	f.createdAgo(sharesOnly, 6*time.Minute)
	finished := f.Task("completed", "", []string{r1}, time.Hour)
	f.createdAgo(finished, 7*time.Minute)
	newer := f.Task("waiting", "", []string{r1}, -1)
	f.createdAgo(newer, 0)
	unrelated := f.Task("waiting", "", []string{repo()}, -1)
	f.createdAgo(unrelated, 8*time.Minute)

	r := f.reaper(nil)
	in, err := r.Inspect(f.Ctx, reaper.InspectOptions{TaskID: target})
	require.NoError(t, err)
	ex := in.Explained
	require.NotNil(t, ex)
	require.NotNil(t, ex.Row)
	require.Equal(t, target, ex.Row.ID)
	require.Equal(t, "waiting", ex.Row.State)
	require.ElementsMatch(t, []string{r1, "shared:" + r2, "shared:" + domain}, ex.Row.Reserved)
	require.WithinDuration(t, in.Snapshot.Now.Add(-time.Minute), ex.Row.Created, 5*time.Second)
	var ids []string
	for _, a := range ex.Ahead {
		ids = append(ids, a.ID)
	}
	require.Equal(t, []string{exclusiveDomain, exclusiveOnR2, sharedOnR1, exclusiveOnR1}, ids, "oldest first")
	require.Equal(t, 4, ex.AheadTotal)

	exp := explain.Explain(in, target)
	require.Equal(t, explain.StatusWaiting, exp.Status)
	require.Len(t, exp.Ahead, 4)
	require.Equal(t, []string{domain}, exp.Ahead[0].Conflicts)

	// A task that does not exist, and an id that is no UUID.
	in, err = r.Inspect(f.Ctx, reaper.InspectOptions{TaskID: sim.NewUUID()})
	require.NoError(t, err)
	require.Nil(t, in.Explained.Row)
	in, err = r.Inspect(f.Ctx, reaper.InspectOptions{TaskID: "not-a-uuid"})
	require.NoError(t, err)
	require.Nil(t, in.Explained.Row)
}

// TestInspectAheadLimit checks that only pulpdb.MaxAhead older tasks are loaded but
// all are counted.
func TestInspectAheadLimit(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	r1 := repo()
	_, err := f.DB.Pool.Exec(f.Ctx, `INSERT INTO core_task (pulp_id, pulp_created, state, name, reserved_resources_record, pulp_domain_id)
		SELECT gen_random_uuid(), now() - make_interval(secs => 100 + g), 'waiting', 'sync', ARRAY[$1], '00000000-0000-4000-8000-000000000001'
		FROM generate_series(1, $2) g`, r1, pulpdb.MaxAhead+7)
	require.NoError(t, err)
	target := f.Task("waiting", "", []string{r1}, -1)
	in, err := f.reaper(nil).Inspect(f.Ctx, reaper.InspectOptions{TaskID: target})
	require.NoError(t, err)
	require.Len(t, in.Explained.Ahead, pulpdb.MaxAhead)
	require.Equal(t, pulpdb.MaxAhead+7, in.Explained.AheadTotal)
	require.Contains(t, explain.Explain(in, target).Conclusion, "(and 56 more older tasks)")
}
