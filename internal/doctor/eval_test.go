package doctor

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/heartbeat"
	"github.com/lock-reaper/lock-reaper/reaper"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
)

func TestEvalEviction(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		policy          string
		maxmemory, used int64
		want            Status
		says            string
	}{
		{"noeviction", 0, 100, OK, "never evicted"},
		{"allkeys-lru", 0, 100, Fail, "may evict lock keys"},
		{"allkeys-lfu", 1 << 30, 100, Fail, "may evict"},
		{"allkeys-random", 1 << 30, 100, Fail, "may evict"},
		{"volatile-lru", 0, 100, Warn, "no headroom data"},
		{"volatile-ttl", 1000, -1, Warn, "used_memory unknown"},
		{"volatile-lfu", 1000, 950, Warn, "little headroom"},
		{"volatile-random", 1000, 100, OK, "10%"},
		{"", 0, 0, Warn, "no maxmemory_policy"},
	} {
		r := evalEviction(tc.policy, tc.maxmemory, tc.used)
		require.Equal(t, tc.want, r.Status, "%s: %s", tc.policy, r.Evidence)
		require.Contains(t, r.Evidence, tc.says, tc.policy)
		require.Equal(t, r.Status == OK, r.Fix == "", "a fix exactly when not ok")
	}
}

func TestEvalPersistence(t *testing.T) {
	t.Parallel()
	neverSaved := info{"aof_enabled": "0", "rdb_last_bgsave_time_sec": "-1", "rdb_saves": "0"}
	for _, tc := range []struct {
		name   string
		p      info
		save   string
		known  bool
		want   Status
		saying string
	}{
		{"aof", info{"aof_enabled": "1", "rdb_last_bgsave_time_sec": "-1"}, "", true, OK, "AOF on"},
		{"rdb save points", neverSaved, "3600 1 300 100", true, OK, "RDB save points 3600 1 300 100"},
		{"nothing", neverSaved, "", true, Warn, "no RDB save points"},
		{"nothing, config refused", neverSaved, "", false, Warn, "save points unknown"},
		{"rdb saved, config refused", info{"aof_enabled": "0", "rdb_last_bgsave_time_sec": "0", "rdb_saves": "3"}, "", false, OK, "RDB has saved"},
		{"failing saves", info{"aof_enabled": "1", "aof_last_write_status": "err"}, "", true, Warn, "failed"},
	} {
		r := evalPersistence(tc.p, tc.save, tc.known)
		require.Equal(t, tc.want, r.Status, "%s: %s", tc.name, r.Evidence)
		require.Contains(t, r.Evidence, tc.saying, tc.name)
	}
}

func TestEvalRole(t *testing.T) {
	t.Parallel()
	require.Equal(t, OK, evalRole([]any{"master", int64(10), []any{}}).Status)
	r := evalRole([]any{"slave", "10.0.0.5", int64(6379), "connected", int64(42)})
	require.Equal(t, Fail, r.Status)
	require.Contains(t, r.Evidence, "replica of 10.0.0.5:6379 (link connected)")
	require.Equal(t, Fail, evalRole([]any{"sentinel", []any{"mymaster"}}).Status)
	require.Equal(t, Warn, evalRole(nil).Status)
}

func TestEvalRedisVersion(t *testing.T) {
	t.Parallel()
	require.Equal(t, OK, evalRedisVersion("7.0.15").Status)
	require.Equal(t, OK, evalRedisVersion("6.2.0").Status)
	require.Equal(t, Fail, evalRedisVersion("6.0.16").Status)
	require.Equal(t, Warn, evalRedisVersion("").Status)
}

func TestClassifyKeys(t *testing.T) {
	t.Parallel()
	for key, class := range map[string]string{
		"task:6f1c4a52-7a3e-4c59-9d1a-0f6e2b8f1c11": classLock,
		"pulp:resource_lock:prn:core.domain:x":      classLock,
		"pulp:owner_locks:1@w":                      classLock,
		"pulp:active_owners":                        classLock,
		"pulp:task:cancel:6f1c":                     classPulp,
		"pulp:lock_reaper:suspects":                 classPulp,
		"PULP_CACHE":                                classCache,
		"rhel9/baseos":                              classCache,
		"default:rhel9/baseos":                      classCache,
		"sessionid":                                 classOthers,
	} {
		require.Equal(t, class, classifyKey(key), key)
	}
	s := newKeySample()
	for _, k := range []string{"task:a", "task:b", "pulp:task:cancel:a"} {
		s.add(k)
	}
	s.complete = true
	require.Equal(t, OK, evalSharedKeyspace(s).Status)
	s.add("rhel9/baseos")
	s.add("rhel9/appstream")
	r := evalSharedKeyspace(s)
	require.Equal(t, Warn, r.Status, r.Evidence)
	require.Contains(t, r.Evidence, `all 5 keys: 2 lock keys, 1 pulp: keys, 2 cache keys, 0 others; top prefixes "rhel9/" 2`)
}

func TestEvalPulpcoreVersions(t *testing.T) {
	t.Parallel()
	r := evalPulpcoreVersions([]processVersion{{"api", "3.117.0", 2}, {"worker", "3.118.1", 3}, {"content", "3.100.0", 1}})
	require.Equal(t, OK, r.Status, r.Evidence)
	// One plain sentence: doctor prints it as the check's line.
	require.Equal(t, "Pulp runs pulpcore 3.117.0 in 2 api processes, 3.118.1 in 3 worker processes and 3.100.0 in 1 content process; "+
		"every worker and api process has pulpcore's own owner registry, startup self-clean and orphan reconcile", r.Evidence)
	r = evalPulpcoreVersions([]processVersion{{"worker", "3.116.0", 2}, {"worker", "3.117.0.dev", 1}, {"api", "", 1}})
	require.Equal(t, Warn, r.Status, r.Evidence)
	require.Equal(t, "Pulp runs pulpcore 3.116.0 in 2 worker processes and 3.117.0.dev in 1 worker process; 1 api process records no pulpcore version; "+
		"the 2 worker processes on 3.116.0 and the api process of unknown version have none of the cleanups pulpcore has since 3.117 "+
		"(owner registry, startup self-clean, orphan reconcile)", r.Evidence)
	r = evalPulpcoreVersions([]processVersion{{"worker", "3.116.0", 1}})
	require.Equal(t, "Pulp runs pulpcore 3.116.0 in 1 worker process; the worker process on 3.116.0 has none of the cleanups pulpcore has since 3.117 "+
		"(owner registry, startup self-clean, orphan reconcile)", r.Evidence)
	// The demo's simulated workers record no version.
	r = evalPulpcoreVersions([]processVersion{{"worker", "", 5}})
	require.Equal(t, "Pulp's 5 worker processes record no pulpcore version; the 5 worker processes of unknown version have none of the cleanups pulpcore has since 3.117 "+
		"(owner registry, startup self-clean, orphan reconcile)", r.Evidence)
	r = evalPulpcoreVersions(nil)
	require.Equal(t, Warn, r.Status)
	require.Equal(t, "core_appstatus has no rows: no Pulp process is running, or database.url names another database", r.Evidence)
}

func TestEvalPooler(t *testing.T) {
	t.Parallel()
	require.Equal(t, OK, evalPooler(poolerProbe{pidBefore: 7, pidAfter: 7, want: "x", got: "x"}).Status)
	r := evalPooler(poolerProbe{pidBefore: 7, pidAfter: 8, want: "x", got: "", cachesStatements: true})
	require.Equal(t, Fail, r.Status)
	require.Contains(t, r.Evidence, "transaction pooler")
	require.Contains(t, r.Fix, "database.exec_mode: exec")
	r = evalPooler(poolerProbe{pidBefore: 7, pidAfter: 8, want: "x", got: ""})
	require.Equal(t, OK, r.Status, "transaction pooling works without a statement cache")
	require.Contains(t, r.Evidence, "transaction pooler")
	r = evalPooler(poolerProbe{inconclusive: true})
	require.Equal(t, Fail, r.Status, "a pass would stop at start")
	require.Contains(t, r.Evidence, "two connections at once")
	require.Contains(t, r.Fix, "pool_size")
	r = evalPooler(poolerProbe{maxConns: 1})
	require.Equal(t, Fail, r.Status)
	require.Contains(t, r.Fix, "pool_max_conns")
}

func TestEvalPrimary(t *testing.T) {
	t.Parallel()
	require.Equal(t, OK, evalPrimary(false, false, false, "15").Status)
	require.Equal(t, Fail, evalPrimary(true, true, false, "15").Status)
	require.Equal(t, Fail, evalPrimary(false, false, true, "15").Status)
}

func TestDocumentedGrants(t *testing.T) {
	t.Parallel()
	set, optional, tables := documentedGrants()
	require.Equal(t, []string{"core_appstatus", "core_progressreport", "core_task"}, tables)
	require.True(t, set[grant{Privilege: "USAGE", Table: "", Column: ""}])
	require.True(t, set[grant{Privilege: "UPDATE", Table: "core_task", Column: "state"}])
	require.True(t, set[grant{Privilege: "SELECT", Table: "core_appstatus", Column: "versions"}])
	require.False(t, set[grant{Privilege: "UPDATE", Table: "core_task", Column: "name"}])
	startedAt := grant{Privilege: "SELECT", Table: "core_task", Column: "started_at"}
	readAllStats := grant{Role: "pg_read_all_stats"}
	taskVersions := grant{Privilege: "SELECT", Table: "core_task", Column: "versions"}
	require.Equal(t, map[grant]bool{readAllStats: true, taskVersions: true}, optional)
	require.True(t, set[startedAt])
	r := evalGrants("r", set, optional, map[grant]bool{{Privilege: "USAGE"}: true})
	require.Equal(t, Fail, r.Status)

	// A role granted before started_at was required fails: a pass only
	// reports a stuck canceling task without it.
	older := map[grant]bool{}
	for g := range set {
		older[g] = g != startedAt
	}
	r = evalGrants("r", set, optional, older)
	require.Equal(t, Fail, r.Status, r.Evidence)
	require.Contains(t, r.Evidence, "missing SELECT (started_at) ON core_task (without it a pass only reports a stuck canceling task")
	r = evalGrants("r", set, optional, set)
	require.Equal(t, OK, r.Status, r.Evidence)
	require.NotContains(t, r.Evidence, "optional")

	// Without pg_read_all_stats: ok, and doctor says what it costs.
	noStats := map[grant]bool{}
	for g := range set {
		noStats[g] = g != readAllStats
	}
	r = evalGrants("r", set, optional, noStats)
	require.Equal(t, OK, r.Status, r.Evidence)
	require.Contains(t, r.Evidence, "without the optional pg_read_all_stats: another role's transaction")
}

func TestEvalHeartbeats(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	rows := []heartbeat.AppStatus{{Name: "1@a", AppType: "worker", LastHeartbeat: now.Add(-5 * time.Second), TTL: 30 * time.Second}}
	require.Equal(t, OK, evalHeartbeats(rows, now).Status)
	rows = append(rows, heartbeat.AppStatus{Name: "1@old", AppType: "worker", LastHeartbeat: now.Add(-48 * time.Hour)})
	r := evalHeartbeats(rows, now)
	require.Equal(t, Warn, r.Status)
	require.Contains(t, r.Evidence, `worker "1@old" 48h0m0s behind`)
	rows = append(rows, heartbeat.AppStatus{Name: "1@b", AppType: "worker", LastHeartbeat: now.Add(10 * time.Minute)})
	r = evalHeartbeats(rows, now)
	require.Contains(t, r.Evidence, `1 heartbeats in the future (worker "1@b" 10m0s ahead)`)
}

func TestEvalLegacyOwners(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	in := &reaper.Inspection{Snapshot: judge.Snapshot{Now: now, AppStatuses: []heartbeat.AppStatus{{ID: "1", Name: "1@live", LastHeartbeat: now, TTL: time.Minute}}}, Policy: reaper.DefaultConfig().Policy}
	fleet := in.Fleet()
	holdings := []judge.Holding{
		{Key: "task:a", Owner: "1@live", Kind: judge.KindTask},
		{Key: "task:b", Owner: "1@gone-registered", Kind: judge.KindTask, Registered: true},
		{Key: "task:c", Owner: "immediate-6f1c", Kind: judge.KindTask},
		{Key: "task:d", Owner: "1@legacy", Kind: judge.KindTask},
	}
	r := evalLegacyOwners(holdings, fleet)
	require.Equal(t, Warn, r.Status)
	require.Contains(t, r.Evidence, `1 owners with no AppStatus row and no registry hold 1 holdings ("1@legacy" 1)`)
	require.Equal(t, OK, evalLegacyOwners(holdings[:3], fleet).Status)
}

func TestStatusLevels(t *testing.T) {
	t.Parallel()
	require.Equal(t, []int{0, 1, 2}, []int{OK.Level(), Warn.Level(), Fail.Level()})
}

// TestDocsDocumentEveryCheck: each check has its row in docs/doctor.md's
// table, and the checks Run runs are exactly CheckNames.
func TestDocsDocumentEveryCheck(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "doctor.md"))
	require.NoError(t, err)
	require.Len(t, checks, len(CheckNames))
	for i, name := range CheckNames {
		require.Equal(t, name, checks[i].name)
		require.Contains(t, string(doc), "| `"+name+"` |", name)
	}
}

// TestEveryACLCommandHasProbeArgs: a command added to the ACL list gets
// probe arguments with it, or the ACL check could not answer for it.
func TestEveryACLCommandHasProbeArgs(t *testing.T) {
	t.Parallel()
	for _, cmd := range aclCommands() {
		require.Contains(t, probeArgs, cmd, "internal/doctor/acl.go probeArgs")
	}
}

// TestEvalACLWithoutSintercard: on a server older than Redis 7.0 the ACL
// leaves +sintercard out (there is no such command; the release script then
// walks the registry), so its absence is no failure there, and only there.
func TestEvalACLWithoutSintercard(t *testing.T) {
	t.Parallel()
	answers := func(unclear ...string) aclAnswers {
		a := aclAnswers{method: "ACL DRYRUN", user: "lock-reaper", allowed: map[string]bool{}, unclear: unclear}
		for _, cmd := range aclCommands() {
			a.allowed[cmd] = cmd != "sintercard"
		}
		for _, p := range deniedProbes {
			a.allowed[p.name] = false
		}
		return a
	}
	a := answers()
	r := evalACL(a)
	require.Equal(t, Fail, r.Status, r.Evidence)
	require.Contains(t, r.Evidence, "refused: sintercard")
	a.withoutIntercard = true
	r = evalACL(a)
	require.Equal(t, OK, r.Status, r.Evidence)

	a = answers("sintercard") // the transaction probe: an unknown command
	delete(a.allowed, "sintercard")
	a.withoutIntercard = true
	r = evalACL(a)
	require.Equal(t, OK, r.Status, r.Evidence)
}
