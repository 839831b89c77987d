package reaper_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/internal/redisserver"
	"github.com/lock-reaper/lock-reaper/internal/sim"
	"github.com/lock-reaper/lock-reaper/internal/testing/passtest"
	"github.com/lock-reaper/lock-reaper/internal/testing/testenv"
	"github.com/lock-reaper/lock-reaper/reaper"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
	"github.com/lock-reaper/lock-reaper/reaper/redislocks"
)

// TestWaitingBacklogDoesNotBlockRedis: 200 dead workers (pulpcore 3.116: no
// registry) each left a lost sync task's locks, its membership of the
// default domain among them, while 20,000 sync tasks wait, each reserving
// its repository and the default domain shared, as pulpcore's dispatch
// records them. Every dead member's release is checked against the tasks
// reserving the domain, and the check used to walk the whole list for each
// member inside one script call (2.1 s of blocked Redis on an idle
// machine). Now no release call is sent more than ReserverCallLimit of the
// reserving tasks' task keys (the time of the pass's longest command, from
// a test-started Redis's SLOWLOG, is logged here and measured in the bench's
// backlog row, not bounded in a test); the memberships
// the cap leaves are deferred with their reason, never failed. Once the
// backlog is under the cap, the next pass releases them.
func TestWaitingBacklogDoesNotBlockRedis(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 20,000 task rows")
	}
	const dead, waiting = 200, 20_000
	srv := redisserver.Start(t, "--slowlog-log-slower-than", "1000", "--slowlog-max-len", "100000")
	keys := &passtest.ReleaseCalls{}
	srv.Client.AddHook(keys)
	f := &fixture{&passtest.Fixture{T: t, Ctx: context.Background(), Redis: &testenv.Redis{Client: srv.Client, URL: srv.URL(0)}, DB: testenv.NewDatabase(t)}}
	domain := "shared:prn:core.domain:" + sim.NewUUID()
	domainKey := judge.ResourceKeyPrefix + strings.TrimPrefix(domain, "shared:")
	owners := make([]string, dead)
	for i := range owners {
		owners[i] = fmt.Sprintf("%d@worker-%03d", 10+i, i)
		row := f.Worker(owners[i], 10*time.Minute)
		reserved := []string{passtest.Repo(), domain}
		lost := f.Task(judge.StateRunning, row, reserved, -1)
		f.Acquire(owners[i], lost, reserved, true)
	}
	_, err := f.DB.Pool.Exec(f.Ctx, `INSERT INTO core_task (pulp_id, state, name, reserved_resources_record, pulp_domain_id)
		SELECT gen_random_uuid(), 'waiting', 'pulp_rpm.app.tasks.synchronize',
		       ARRAY['prn:rpm.rpmrepository:' || gen_random_uuid(), $1], '00000000-0000-4000-8000-000000000001'
		FROM generate_series(1, $2)`, domain, waiting)
	require.NoError(t, err)
	require.NoError(t, srv.Client.Do(f.Ctx, "SLOWLOG", "RESET").Err())

	r := f.reaper(func(c *reaper.Config) {
		c.BatchSize = reaper.DefaultConfig().BatchSize
		c.Policy.MaxDeadFraction = 1 // every worker row here is dead
	})
	rep := f.pass(r, reaper.ModeOnce)
	for _, o := range owners {
		fd := findingFor(rep, domainKey, o)
		require.Equal(t, reaper.ResultDeferred, fd.Result, "%s: more tasks reserve the domain than a call checks", o)
		require.Equal(t, judge.DeferredTooManyReservers, fd.Deferred)
	}
	require.ElementsMatch(t, owners, f.Members(domainKey), "left for a later pass, untouched")
	longest := longestCommand(t, srv.Client)
	t.Logf("longest command %s; at most %d task keys in one release call", describeSlow(longest), keys.Most())
	require.LessOrEqual(t, keys.Most(), redislocks.ReserverCallLimit(reaper.DefaultReleaseCallHoldings), "a release call was sent more reserving tasks than the cap")

	// The backlog drains below the cap: the memberships go.
	_, err = f.DB.Pool.Exec(f.Ctx, `UPDATE core_task SET state = 'completed', finished_at = now()
		WHERE pulp_id IN (SELECT pulp_id FROM core_task WHERE state = 'waiting' LIMIT $1)`, waiting-redislocks.ReserverCallLimit(reaper.DefaultReleaseCallHoldings)/4)
	require.NoError(t, err)
	rep = f.pass(r, reaper.ModeOnce)
	for _, o := range owners {
		require.Equal(t, reaper.ResultReleased, findingFor(rep, domainKey, o).Result, o)
	}
	require.Empty(t, f.Members(domainKey))
	longest = longestCommand(t, srv.Client)
	t.Logf("longest command %s; at most %d task keys in one release call", describeSlow(longest), keys.Most())
	require.Positive(t, keys.Most(), "the memberships were checked against the waiting tasks")
	require.LessOrEqual(t, keys.Most(), redislocks.ReserverCallLimit(reaper.DefaultReleaseCallHoldings))
}
