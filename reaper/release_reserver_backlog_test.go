package reaper_test

import (
	"context"
	"crypto/sha1"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
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
// reserving tasks' task keys, and the longest command of the pass on a
// test-started Redis (its SLOWLOG) stays far below that; the memberships
// the cap leaves are deferred with their reason, never failed. Once the
// backlog is under the cap, the next pass releases them.
func TestWaitingBacklogDoesNotBlockRedis(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 20,000 task rows")
	}
	const dead, waiting = 200, 20_000
	srv := redisserver.Start(t, "--slowlog-log-slower-than", "1000", "--slowlog-max-len", "100000")
	keys := &releaseTaskKeys{}
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
	t.Logf("longest command %s; at most %d task keys in one release call", describeSlow(longest), keys.most())
	require.LessOrEqual(t, keys.most(), redislocks.ReserverCallLimit, "a release call was sent more reserving tasks than the cap")
	require.Less(t, longest.Duration, 500*time.Millisecond, "a command of the pass blocked Redis: %s", describeSlow(longest))

	// The backlog drains below the cap: the memberships go.
	_, err = f.DB.Pool.Exec(f.Ctx, `UPDATE core_task SET state = 'completed', finished_at = now()
		WHERE pulp_id IN (SELECT pulp_id FROM core_task WHERE state = 'waiting' LIMIT $1)`, waiting-redislocks.ReserverCallLimit/4)
	require.NoError(t, err)
	rep = f.pass(r, reaper.ModeOnce)
	for _, o := range owners {
		require.Equal(t, reaper.ResultReleased, findingFor(rep, domainKey, o).Result, o)
	}
	require.Empty(t, f.Members(domainKey))
	longest = longestCommand(t, srv.Client)
	t.Logf("longest command %s; at most %d task keys in one release call", describeSlow(longest), keys.most())
	require.Positive(t, keys.most(), "the memberships were checked against the waiting tasks")
	require.LessOrEqual(t, keys.most(), redislocks.ReserverCallLimit)
	require.Less(t, longest.Duration, 500*time.Millisecond, "a command of the pass blocked Redis: %s", describeSlow(longest))
}

// releaseTaskKeys records the most task keys a call of the release script
// was sent: its KEYS are lock keys of holdings, and everything naming a task
// lock besides is a reserving task's (each argument counted for every
// "task:" in it, whatever the layout of the script's arguments).
type releaseTaskKeys struct {
	mu  sync.Mutex
	max int
}

func (c *releaseTaskKeys) most() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.max
}

func (c *releaseTaskKeys) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *releaseTaskKeys) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		// A first EVALSHA the server answers NOSCRIPT is sent again as EVAL.
		if args := cmd.Args(); isReleaseCall(cmd) && len(args) > 3 && !redis.HasErrorPrefix(err, "NOSCRIPT") {
			numKeys, _ := args[2].(int)
			n := 0
			for _, a := range args[3+numKeys:] {
				if s, ok := a.(string); ok {
					n += strings.Count(s, judge.TaskKeyPrefix)
				}
			}
			c.mu.Lock()
			c.max = max(c.max, n)
			c.mu.Unlock()
		}
		return err
	}
}

// isReleaseCall says cmd calls the release script: its EVALSHA, or the EVAL
// go-redis falls back to when the server has not loaded it yet.
func isReleaseCall(cmd redis.Cmder) bool {
	args := cmd.Args()
	if len(args) < 2 {
		return false
	}
	switch cmd.Name() {
	case "evalsha":
		return args[1] == redislocks.ReleaseScriptSHA()
	case "eval":
		src, ok := args[1].(string)
		return ok && fmt.Sprintf("%x", sha1.Sum([]byte(src))) == redislocks.ReleaseScriptSHA()
	}
	return false
}

func (c *releaseTaskKeys) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
