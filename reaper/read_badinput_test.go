package reaper_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lock-reaper/lock-reaper/internal/exitcode"
	"github.com/lock-reaper/lock-reaper/internal/sim"
	"github.com/lock-reaper/lock-reaper/reaper"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
	"github.com/lock-reaper/lock-reaper/reaper/redislocks"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// The bad input tests fill Redis and the database with what a real system
// may hold besides well-formed Pulp locks. Each case must get a clear report
// entry (ignored with a reason, or a correct verdict), cause no panic and no
// error, and leave everything healthy (and everything not a lock) untouched.
// The parsers themselves are fuzzed in fuzz_test.go.

// biIgnored returns the report's ignored entry for key, failing if none.
func biIgnored(t *testing.T, rep *reaper.Report, key string) reaper.Ignored {
	t.Helper()
	for _, ig := range rep.Ignored {
		if ig.Key == key {
			return ig
		}
	}
	require.Failf(t, "key not reported as ignored", "%q", key)
	return reaper.Ignored{}
}

// keyState renders one key for before/after comparison.
func (f *fixture) keyState(key string) string {
	f.T.Helper()
	d, err := f.Redis.Client.Dump(f.Ctx, key).Result()
	require.NoError(f.T, err)
	return d
}

// TestBadInputKeyTypes: keys of every Redis type under both lock prefixes,
// and string values that are not owner names (empty, binary, 1 MB), are
// reported as ignored with their type and a reason, and never touched, while
// the real locks beside them are handled as usual.
func TestBadInputKeyTypes(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	fl := f.buildFleet(2)
	ctx, rdb := f.Ctx, f.Redis.Client
	taskKey := func() string { return judge.TaskKeyPrefix + sim.NewUUID() }
	resKey := func() string { return judge.ResourceKeyPrefix + repo() }

	type bad struct{ key, typ, reason string }
	var cases []bad
	add := func(key, typ, reason string, write func(string) error) {
		require.NoError(t, write(key), key)
		cases = append(cases, bad{key, typ, reason})
	}
	for _, prefix := range []func() string{taskKey, resKey} {
		add(prefix(), "list", "lock key of type list", func(k string) error { return rdb.RPush(ctx, k, fl.deadOwner).Err() })
		add(prefix(), "zset", "lock key of type zset", func(k string) error {
			return rdb.ZAdd(ctx, k, redis.Z{Score: 1, Member: fl.deadOwner}).Err()
		})
		add(prefix(), "hash", "lock key of type hash", func(k string) error { return rdb.HSet(ctx, k, "owner", fl.deadOwner).Err() })
		add(prefix(), "stream", "lock key of type stream", func(k string) error {
			return rdb.XAdd(ctx, &redis.XAddArgs{Stream: k, Values: []string{"owner", fl.deadOwner}}).Err()
		})
		add(prefix(), "string", "empty owner name", func(k string) error { return rdb.Set(ctx, k, "", 0).Err() })
		add(prefix(), "string", "not valid UTF-8", func(k string) error { return rdb.Set(ctx, k, "\xff\xfe\x00\x01", 0).Err() })
		add(prefix(), "string", "control characters", func(k string) error { return rdb.Set(ctx, k, "1@dead-worker\n", 0).Err() })
		add(prefix(), "string", "longer than 1024 bytes", func(k string) error {
			return rdb.Set(ctx, k, strings.Repeat("x", 1<<20), 0).Err()
		})
	}
	add(taskKey(), "set", "task lock is a set", func(k string) error { return rdb.SAdd(ctx, k, fl.deadOwner).Err() })
	// A shared set keeps its good members; only the bad ones are ignored.
	mixed := resKey()
	add(mixed, "set", "member", func(k string) error { return rdb.SAdd(ctx, k, fl.deadOwner, "", "\xff").Err() })

	before := map[string]string{}
	for _, c := range cases {
		if c.key != mixed {
			before[c.key] = f.keyState(c.key)
		}
	}
	rep := f.pass(f.reaper(nil), reaper.ModeOnce)
	require.Empty(t, rep.Error)
	for _, c := range cases {
		ig := biIgnored(t, rep, c.key)
		require.Equal(t, c.typ, ig.Type, c.key)
		require.Contains(t, ig.Reason, c.reason, c.key)
		require.Less(t, len(ig.Reason), 200, "a reason quotes a value only briefly")
		if c.key != mixed {
			require.Equal(t, before[c.key], f.keyState(c.key), "ignored key touched: %s", c.key)
		}
	}
	require.Equal(t, reaper.ResultReleased, findingFor(rep, mixed, fl.deadOwner).Result, "the good member of a set with bad ones")
	require.ElementsMatch(t, []string{"", "\xff"}, f.Members(mixed))
	f.requireConverged(fl)
}

// TestBadInputMalformedTaskKeys: task keys whose id is not pulpcore's
// canonical lowercase UUID are not task locks, even with a dead owner.
func TestBadInputMalformedTaskKeys(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	fl := f.buildFleet(1)
	id := sim.NewUUID()
	keys := []string{judge.TaskKeyPrefix +
		strings.ToUpper(id), judge.TaskKeyPrefix +
		"{" + id + "}", judge.TaskKeyPrefix +
		id[:8], judge.TaskKeyPrefix +
		id + "0", judge.TaskKeyPrefix +
		strings.ReplaceAll(id, "-", ""), judge.TaskKeyPrefix, judge.TaskKeyPrefix +
		" " + id,
	}
	for _, k := range keys {
		require.NoError(t, f.Redis.Client.Set(f.Ctx, k, fl.deadOwner, 0).Err())
	}
	rep := f.pass(f.reaper(nil), reaper.ModeOnce)
	require.Empty(t, rep.Error)
	for _, k := range keys {
		require.Equal(t, "task key without a canonical lowercase task UUID", biIgnored(t, rep, k).Reason, k)
		require.Equal(t, fl.deadOwner, f.Get(k), "untouched: %q", k)
	}
	f.requireConverged(fl)
}

// TestBadInputRegistryOfWrongTypes: the owner registry and the reaper's own
// suspects key holding something else do not stop a pass; the locks
// themselves are still found by the scan.
func TestBadInputRegistryOfWrongTypes(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	dead := f.Worker("5@dead", time.Hour)
	for i := range 3 {
		f.Worker(fmt.Sprintf("5@live-%d", i), time.Second)
	}
	task := f.Task(judge.StateRunning, dead, nil, -1)
	require.NoError(t, f.Redis.Client.Set(f.Ctx, judge.TaskKeyPrefix+task, "5@dead", 0).Err())
	ctx, rdb := f.Ctx, f.Redis.Client
	require.NoError(t, rdb.Set(ctx, redislocks.ActiveOwnersKey, "not a set", 0).Err())
	require.NoError(t, rdb.HSet(ctx, redislocks.OwnerLocksPrefix+"5@dead", "a", "b").Err())
	require.NoError(t, rdb.Set(ctx, redislocks.SuspectsKey, "not a hash", 0).Err())

	rep := f.pass(f.reaper(nil), reaper.ModeOnce)
	require.Empty(t, rep.Error)
	require.Equal(t, reaper.ResultReleased, findingFor(rep, judge.TaskKeyPrefix+task, "5@dead").Result)
	require.Equal(t, "not a set", f.Get(redislocks.ActiveOwnersKey), "a registry of the wrong type is not the reaper's to fix")

	// A registry naming keys that are not locks, or locks that are gone.
	require.NoError(t, rdb.Del(ctx, redislocks.ActiveOwnersKey).Err())
	require.NoError(t, rdb.SAdd(ctx, redislocks.ActiveOwnersKey, "5@live-0", "").Err())
	require.NoError(t, rdb.SAdd(ctx, redislocks.OwnerLocksPrefix+"5@live-0", "unrelated", judge.TaskKeyPrefix+sim.NewUUID()).Err())
	require.NoError(t, rdb.Set(ctx, "unrelated", "5@live-0", 0).Err())
	rep = f.pass(f.reaper(nil), reaper.ModeOnce)
	require.Empty(t, rep.Error)
	require.Equal(t, "5@live-0", f.Get("unrelated"))
}

// TestBadInputHugeSharedSet: one shared set with 100,000 members, live and
// dead workers' and owners without any row, is handled in one pass: every
// member that is not a live worker's goes, and the live ones stay.
func TestBadInputHugeSharedSet(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	fl := f.buildFleet(2) // the four live workers and the dead one are members of the domain set
	const members = 100_000
	ctx, key := f.Ctx, judge.ResourceKeyPrefix+domain
	gone := members - len(fl.liveOwners) - 1
	for start := 0; start < gone; start += 10_000 {
		batch := make([]any, 0, 10_000)
		for i := start; i < min(start+10_000, gone); i++ {
			batch = append(batch, fmt.Sprintf("%d@gone-host-%d", i, i%97))
		}
		require.NoError(t, f.Redis.Client.SAdd(ctx, key, batch...).Err())
	}
	require.EqualValues(t, members, f.Redis.Client.SCard(ctx, key).Val())

	r := f.reaper(func(c *reaper.Config) { c.BatchSize = 1000; c.MaxReleases = 2 * members })
	rep := f.pass(r, reaper.ModeOnce)
	require.Equal(t, exitcode.OK, exitcode.Of(rep), rep.Error)
	require.Equal(t, gone+len(fl.stale), rep.Summary.Released)
	require.Equal(t, gone, rep.Summary.HoldingsByVerdict[judge.VerdictOwnerGone])
	require.ElementsMatch(t, fl.liveOwners, f.Members(key))
	f.requireConverged(fl)
}

// TestBadInputReservedResourcesRecord: a task's reserved_resources_record may
// be NULL, empty, hold duplicates or NULL elements. Its task lock is judged
// on its own; its resource holdings are justified by what the record does
// list, and otherwise only suspected, never released outright for a live
// owner.
func TestBadInputReservedResourcesRecord(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	live := f.Worker("6@live", time.Second)
	dead := f.Worker("6@dead", time.Hour)
	f.Worker("6@live-2", time.Second)
	f.Worker("6@live-3", time.Second)

	insert := func(state, appLock, record string) string {
		id := sim.NewUUID()
		_, err := f.DB.Pool.Exec(f.Ctx, `INSERT INTO core_task (pulp_id, state, name, app_lock_id, reserved_resources_record, pulp_domain_id)
			VALUES ($1, $2, 'bad.record', $3, `+record+`, '00000000-0000-4000-8000-000000000001')`, id, state, appLock)
		require.NoError(t, err)
		return id
	}
	rNull, rEmpty, rDup, rNullElem, rDead := repo(), repo(), repo(), repo(), repo()
	tNull := insert(judge.StateRunning, live, "NULL")
	tEmpty := insert(judge.StateRunning, live, "'{}'")
	tDup := insert(judge.StateRunning, live, fmt.Sprintf("ARRAY['%s', '%s', 'shared:%s', 'shared:%s']", rDup, rDup, domain, domain))
	tNullElem := insert(judge.StateRunning, live, fmt.Sprintf("ARRAY[NULL, '%s', NULL]", rNullElem))
	tDead := insert(judge.StateRunning, dead, "ARRAY[NULL, NULL]::text[]")
	f.Acquire("6@live", tNull, []string{rNull}, false)
	f.Acquire("6@live", tEmpty, []string{rEmpty}, false)
	f.Acquire("6@live", tDup, []string{rDup, "shared:" + domain}, false)
	f.Acquire("6@live", tNullElem, []string{rNullElem}, false)
	f.Acquire("6@dead", tDead, []string{rDead}, false)

	rep := f.pass(f.reaper(nil), reaper.ModeOnce)
	require.Equal(t, exitcode.OK, exitcode.Of(rep), rep.Error)
	for _, id := range []string{tNull, tEmpty, tDup, tNullElem} {
		require.Nil(t, findingFor(rep, judge.TaskKeyPrefix+id, "6@live"), "a healthy task lock is no finding")
		require.Equal(t, "6@live", f.Get(judge.TaskKeyPrefix+id))
	}
	// Justified by the record: no finding, still held.
	require.Nil(t, findingFor(rep, judge.ResourceKeyPrefix+rDup, "6@live"))
	require.Nil(t, findingFor(rep, judge.ResourceKeyPrefix+domain, "6@live"))
	require.Nil(t, findingFor(rep, judge.ResourceKeyPrefix+rNullElem, "6@live"))
	// Not listed by any record of its owner: a suspect, kept for now.
	for _, r := range []string{rNull, rEmpty} {
		fd := findingFor(rep, judge.ResourceKeyPrefix+r, "6@live")
		require.Equal(t, judge.VerdictNoTask, fd.Verdict)
		require.Equal(t, reaper.ResultSuspected, fd.Result)
		require.Equal(t, "6@live", f.Get(judge.ResourceKeyPrefix+r))
	}
	// A dead owner's locks go whatever its record says.
	require.Equal(t, reaper.ResultReleased, findingFor(rep, judge.TaskKeyPrefix+tDead, "6@dead").Result)
	require.Equal(t, reaper.ResultReleased, findingFor(rep, judge.ResourceKeyPrefix+rDead, "6@dead").Result)
	require.Equal(t, reaper.ResultUpdated, taskFindingFor(rep, tDead).Result)
}

// TestBadInputAppStatusRows: heartbeat rows with a zero, negative or
// century-long ttl, and heartbeats from the future, give a liveness without
// overflow or panic, and no live owner's lock is released.
func TestBadInputAppStatusRows(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	row := func(name, ttl string, beatAgo time.Duration) string {
		id := sim.NewUUID()
		_, err := f.DB.Pool.Exec(f.Ctx, `INSERT INTO core_appstatus (pulp_id, app_type, name, ttl, last_heartbeat)
			VALUES ($1, 'worker', $2, $3::interval, now() - make_interval(secs => $4))`, id, name, ttl, beatAgo.Seconds())
		require.NoError(t, err)
		return id
	}
	type owner struct {
		name, ttl string
		beatAgo   time.Duration
		keep      bool
		verdict   judge.Verdict
	}
	owners := []owner{
		{"7@zero-ttl-recent", "0", time.Second, true, judge.VerdictPending}, // late, within grace
		{"7@zero-ttl-old", "0", time.Hour, false, judge.VerdictOwnerDead},
		{"7@negative-ttl", "-1 hour", time.Second, true, judge.VerdictPending},
		{"7@century-ttl", "100 years", 50 * 365 * 24 * time.Hour, true, judge.VerdictHealthy},
		{"7@huge-ttl", "100000 years", time.Hour, true, judge.VerdictHealthy},
		{"7@future-beat", "30 seconds", -time.Hour, true, judge.VerdictHealthy},
		{"7@live", "30 seconds", time.Second, true, judge.VerdictHealthy},
	}
	for _, o := range owners {
		id := row(o.name, o.ttl, o.beatAgo)
		task := f.Task(judge.StateRunning, id, nil, -1)
		f.Acquire(o.name, task, nil, false)
	}
	rep := f.pass(f.reaper(nil), reaper.ModeOnce)
	require.Empty(t, rep.Error)
	require.Empty(t, rep.Guards)
	byOwner := map[string]judge.Verdict{}
	for _, fd := range rep.Findings {
		byOwner[fd.Owner] = fd.Verdict
	}
	for _, o := range owners {
		v, found := byOwner[o.name]
		if o.verdict == judge.VerdictHealthy {
			require.False(t, found, "%s: healthy, no finding", o.name)
		} else {
			require.Equal(t, o.verdict, v, o.name)
		}
		keys, err := f.Redis.Client.Keys(f.Ctx, judge.TaskKeyPrefix+"*").Result()
		require.NoError(t, err)
		held := false
		for _, k := range keys {
			held = held || f.Get(k) == o.name
		}
		require.Equal(t, o.keep, held, o.name)
	}
}

// TestBadInputOwnerNames: owner names with spaces, '@', ':' and non-ASCII
// characters are owner names like any other: live ones keep their locks,
// dead ones lose them, and the registry keys built from them are handled.
func TestBadInputOwnerNames(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	names := []string{"1@host with spaces", "1@host:with:colons", "a@b@c", "1@hôst-ünïcödé-日本", "immediate-not-a-uuid", "🙂"}
	type placed struct{ task, res heldKey }
	var live, dead []placed
	for i, base := range names {
		for _, alive := range []bool{true, false} {
			name, age := base+" live", time.Second
			if !alive {
				name, age = base+" dead", time.Hour
			}
			row := f.Worker(name, age)
			r := repo()
			task := f.Task(judge.StateRunning, row, []string{r}, -1)
			f.Acquire(name, task, []string{r}, i%2 == 0)
			p := placed{heldKey{judge.TaskKeyPrefix + task, name}, heldKey{judge.ResourceKeyPrefix + r, name}}
			if alive {
				live = append(live, p)
			} else {
				dead = append(dead, p)
			}
		}
	}
	rep := f.pass(f.reaper(func(c *reaper.Config) { c.MaxDeadFraction = 1 }), reaper.ModeOnce)
	require.Equal(t, exitcode.OK, exitcode.Of(rep), rep.Error)
	require.Empty(t, rep.Ignored)
	for _, p := range live {
		require.True(t, f.holds(p.task), p.task.owner)
		require.True(t, f.holds(p.res), p.res.owner)
	}
	for _, p := range dead {
		require.Equal(t, judge.VerdictOwnerDead, findingFor(rep, p.task.key, p.task.owner).Verdict)
		require.False(t, f.holds(p.task), p.task.owner)
		require.False(t, f.holds(p.res), p.res.owner)
		require.Empty(t, f.Members(redislocks.OwnerLocksPrefix+p.task.owner), "registry emptied")
	}
}
