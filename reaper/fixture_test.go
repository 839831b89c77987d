package reaper

import (
	"context"
	"crypto/rand"
	"fmt"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/internal/testenv"
	"github.com/lock-reaper/lock-reaper/judge"
	"github.com/lock-reaper/lock-reaper/redislocks"
)

// fixture is a real Redis database and a real PostgreSQL database holding
// pulpcore's tables, with helpers that write what Pulp writes.
type fixture struct {
	t     *testing.T
	ctx   context.Context
	redis *testenv.Redis
	db    *testenv.Database
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	return &fixture{t: t, ctx: context.Background(), redis: testenv.NewRedis(t), db: testenv.NewDatabase(t)}
}

func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// appStatus inserts a core_appstatus row whose last heartbeat is age ago on
// the database clock, and returns its pulp_id.
func (f *fixture) appStatus(name, appType string, ttl, age time.Duration) string {
	f.t.Helper()
	id := newUUID()
	_, err := f.db.Pool.Exec(f.ctx, `INSERT INTO core_appstatus (pulp_id, app_type, name, ttl, last_heartbeat)
		VALUES ($1, $2, $3, make_interval(secs => $4), now() - make_interval(secs => $5))`,
		id, appType, name, ttl.Seconds(), age.Seconds())
	require.NoError(f.t, err)
	return id
}

func (f *fixture) worker(name string, age time.Duration) string {
	return f.appStatus(name, "worker", 30*time.Second, age)
}

// task inserts a core_task row. appLock may be "" (NULL); finishedAgo < 0
// leaves finished_at NULL.
func (f *fixture) task(state, appLock string, reserved []string, finishedAgo time.Duration) string {
	f.t.Helper()
	id := newUUID()
	var lock any
	if appLock != "" {
		lock = appLock
	}
	var finished any
	if finishedAgo >= 0 {
		finished = finishedAgo.Seconds()
	}
	_, err := f.db.Pool.Exec(f.ctx, `INSERT INTO core_task (pulp_id, state, name, app_lock_id, reserved_resources_record, pulp_domain_id, finished_at)
		VALUES ($1, $2, 'pulp_rpm.app.tasks.synchronize', $3, $4, '00000000-0000-4000-8000-000000000001',
		        CASE WHEN $5::float8 IS NULL THEN NULL ELSE now() - make_interval(secs => $5::float8) END)`,
		id, state, lock, reserved, finished)
	require.NoError(f.t, err)
	return id
}

func (f *fixture) progressReport(taskID, state string) string {
	f.t.Helper()
	id := newUUID()
	_, err := f.db.Pool.Exec(f.ctx, `INSERT INTO core_progressreport (pulp_id, message, code, state, task_id) VALUES ($1, 'Downloading', 'sync.downloading', $2, $3)`, id, state, taskID)
	require.NoError(f.t, err)
	return id
}

// acquire writes the locks of a task the way Pulp's acquire script does: the
// task key and exclusive keys set to the owner, the owner added to shared
// sets, and (unless legacy) every key in the owner's registry.
func (f *fixture) acquire(owner, taskID string, reserved []string, legacy bool) {
	f.t.Helper()
	rdb := f.redis.Client
	keys := []string{judge.TaskKeyPrefix + taskID}
	require.NoError(f.t, rdb.Set(f.ctx, judge.TaskKeyPrefix+taskID, owner, 0).Err())
	for _, r := range reserved {
		if name, shared := cutShared(r); shared {
			require.NoError(f.t, rdb.SAdd(f.ctx, judge.ResourceKeyPrefix+name, owner).Err())
			keys = append(keys, judge.ResourceKeyPrefix+name)
		} else {
			require.NoError(f.t, rdb.Set(f.ctx, judge.ResourceKeyPrefix+r, owner, 0).Err())
			keys = append(keys, judge.ResourceKeyPrefix+r)
		}
	}
	if legacy {
		return
	}
	for _, k := range keys {
		require.NoError(f.t, rdb.SAdd(f.ctx, redislocks.OwnerLocksPrefix+owner, k).Err())
	}
	require.NoError(f.t, rdb.SAdd(f.ctx, redislocks.ActiveOwnersKey, owner).Err())
}

func cutShared(r string) (string, bool) {
	if len(r) > 7 && r[:7] == "shared:" {
		return r[7:], true
	}
	return r, false
}

func (f *fixture) reaper(mutate func(*Config)) *Reaper {
	f.t.Helper()
	cfg := DefaultConfig()
	cfg.BatchSize = 7 // several batches even in small tests
	if mutate != nil {
		mutate(&cfg)
	}
	r, err := New(cfg, f.redis.Client, f.db.Pool, testLogger())
	require.NoError(f.t, err)
	return r
}

func testLogger() *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

func (f *fixture) pass(r *Reaper, mode string) *Report {
	f.t.Helper()
	rep, err := r.RunOnce(f.ctx, PassOptions{Mode: mode})
	require.NoError(f.t, err)
	return rep
}

func (f *fixture) get(key string) string {
	v, err := f.redis.Client.Get(f.ctx, key).Result()
	if err != nil {
		return ""
	}
	return v
}

func (f *fixture) members(key string) []string {
	v, _ := f.redis.Client.SMembers(f.ctx, key).Result()
	return v
}

func (f *fixture) taskRow(id string) (state string, appLock *string, reason *string, finished *time.Time) {
	f.t.Helper()
	require.NoError(f.t, f.db.Pool.QueryRow(f.ctx,
		`SELECT state, app_lock_id::text, error->>'reason', finished_at FROM core_task WHERE pulp_id = $1`, id).
		Scan(&state, &appLock, &reason, &finished))
	return
}

// forgeSuspectAge moves every remembered suspect's first sighting back, as if
// confirm_after had passed.
func (f *fixture) ageSuspects(by time.Duration) {
	f.t.Helper()
	s, err := redislocks.ReadSuspects(f.ctx, f.redis.Client, time.Second)
	require.NoError(f.t, err)
	for k, v := range s {
		v.FirstSeen = v.FirstSeen.Add(-by)
		s[k] = v
	}
	require.NoError(f.t, redislocks.WriteSuspects(f.ctx, f.redis.Client, time.Second, time.Hour, s))
}

func findingFor(rep *Report, key, owner string) *Finding {
	for i := range rep.Findings {
		if rep.Findings[i].Key == key && rep.Findings[i].Owner == owner {
			return &rep.Findings[i]
		}
	}
	return nil
}

func taskFindingFor(rep *Report, id string) *TaskFinding {
	for i := range rep.Tasks {
		if rep.Tasks[i].ID == id {
			return &rep.Tasks[i]
		}
	}
	return nil
}
