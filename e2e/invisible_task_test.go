package e2e

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/internal/sim"
	"github.com/lock-reaper/lock-reaper/internal/testing/testenv"
	"github.com/lock-reaper/lock-reaper/reaper"
)

// Found by the chaos test (a safety violation of an API process during an
// immediate task): an API process leaked the locks of a finished immediate
// task T1 (leak path 6), and is now running immediate task T2 inside its
// request transaction, so T2's row is not visible yet. Both reserve the
// domain shared, so the API's one membership of the domain's set serves
// both. The pass sees task:T2 (task-missing, a suspect) but cannot know what
// T2 reserves, so nothing justifies the membership; it inherited T1's
// task-finished verdict and was released from under T2.
//
// A resource holding of an owner that also holds a kept task lock whose row
// is not visible may belong to that task, and must be kept.
func TestResourceOfATaskWithInvisibleRowIsKept(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	rd, db := testenv.NewRedis(t), testenv.NewDatabase(t)
	api := "7@pulp-api-0"
	apiRow := sim.NewUUID()
	_, err := db.Pool.Exec(ctx, `INSERT INTO core_appstatus (pulp_id, app_type, name, ttl, last_heartbeat)
VALUES ($1, 'api', $2, interval '120 seconds', now())`, apiRow, api)
	require.NoError(t, err)
	domain := sim.DomainPRN(sim.DefaultDomainID)

	// T1: completed a minute ago, its locks leaked under the API.
	repo1 := sim.RepositoryPRN(sim.NewUUID())
	ids, err := sim.InsertTasks(ctx, db.Pool, sim.TaskSpec{Name: "immediate", Exclusive: []string{repo1}})
	require.NoError(t, err)
	t1 := ids[0]
	_, err = db.Pool.Exec(ctx, `UPDATE core_task SET state = 'completed', finished_at = now() - interval '1 minute',
  app_lock_id = $2, immediate = true WHERE pulp_id = $1`, t1, apiRow)
	require.NoError(t, err)
	blocked, err := sim.Acquire(ctx, rd.Client, t1, api, []string{repo1}, []string{domain})
	require.NoError(t, err)
	require.Empty(t, blocked)

	// T2: running in the API's request transaction, not committed.
	repo2 := sim.RepositoryPRN(sim.NewUUID())
	t2 := sim.NewUUID()
	tx, err := db.Pool.Begin(ctx)
	require.NoError(t, err)
	defer tx.Rollback(context.WithoutCancel(ctx)) // error dropped: the test ends the transaction either way
	_, err = tx.Exec(ctx, `INSERT INTO core_task (pulp_id, state, name, reserved_resources_record, pulp_domain_id, app_lock_id, immediate, started_at)
VALUES ($1, 'running', 'immediate', $2, $3, $4, true, now())`, t2, []string{repo2, sim.SharedPrefix + domain}, sim.DefaultDomainID, apiRow)
	require.NoError(t, err)
	blocked, err = sim.Acquire(ctx, rd.Client, t2, api, []string{repo2}, []string{domain})
	require.NoError(t, err)
	require.Empty(t, blocked)

	cfg := reaperConfig()
	rp, err := reaper.New(cfg, rd.Client, db.Pool, nil)
	require.NoError(t, err)
	rep, err := rp.RunOnce(ctx, reaper.Options{Mode: reaper.ModeOnce})
	require.NoError(t, err)

	// T1's task lock and exclusive repository go; T2's task lock and
	// repository are suspects. The domain membership does not inherit T1's
	// verdict, since it may be T2's: it waits as a suspect, like T2's own
	// locks, for T2's row to appear or for confirm_after to pass.
	results := map[holdingRef]reaper.Result{}
	for _, f := range rep.Findings {
		results[holdingRef{Key: f.Key, Owner: f.Owner}] = f.Result
	}
	require.Equal(t, reaper.ResultReleased, results[holdingRef{Key: sim.TaskKey(t1), Owner: api}])
	require.Equal(t, reaper.ResultReleased, results[holdingRef{Key: sim.ResourceKey(repo1), Owner: api}])
	require.Equal(t, reaper.ResultSuspected, results[holdingRef{Key: sim.TaskKey(t2), Owner: api}])
	require.Equal(t, reaper.ResultSuspected, results[holdingRef{Key: sim.ResourceKey(repo2), Owner: api}])
	require.Equal(t, reaper.ResultSuspected, results[holdingRef{Key: sim.ResourceKey(domain), Owner: api}])
	member, err := rd.Client.SIsMember(ctx, sim.ResourceKey(domain), api).Result()
	require.NoError(t, err)
	require.True(t, member, "the domain membership T2 needs was released: %+v", rep.Findings)
	require.Equal(t, api, rd.Client.Get(ctx, sim.ResourceKey(repo2)).Val(), "T2's repository lock was released")

	// When T2 ends, its own release takes the one membership both tasks
	// shared: keeping it cost nothing.
	require.NoError(t, tx.Commit(ctx))
	_, err = sim.Release(ctx, rd.Client, t2, api, []string{repo2}, []string{domain})
	require.NoError(t, err)
	hs, err := sim.ScanHoldings(ctx, rd.Client)
	require.NoError(t, err)
	require.Empty(t, hs)
}
