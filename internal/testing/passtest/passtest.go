// Package passtest gives the tests of pulpdb, redislocks and pass a real
// Redis database and a real PostgreSQL database holding pulpcore's tables,
// with helpers that write what Pulp writes.
package passtest

import (
	"context"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/internal/sim"
	"github.com/lock-reaper/lock-reaper/internal/testing/testenv"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
	"github.com/lock-reaper/lock-reaper/reaper/redislocks"
)

// Domain is the pulp domain of the tasks Task inserts, as a resource name.
const Domain = "prn:core.domain:00000000-0000-4000-8000-000000000001"

// Fixture is a real Redis database and a real PostgreSQL database holding
// pulpcore's tables.
type Fixture struct {
	T     *testing.T
	Ctx   context.Context
	Redis *testenv.Redis
	DB    *testenv.Database
}

// New claims a Redis database and creates a PostgreSQL database for t.
func New(t *testing.T) *Fixture {
	t.Helper()
	return &Fixture{T: t, Ctx: context.Background(), Redis: testenv.NewRedis(t), DB: testenv.NewDatabase(t)}
}

// Repo returns a new repository's resource name.
func Repo() string { return "prn:rpm.rpmrepository:" + sim.NewUUID() }

// Logger is the logger of the code under test: to stderr with -v, else none.
func Logger() *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

// AppStatus inserts a core_appstatus row whose last heartbeat is age ago on
// the database clock, and returns its pulp_id.
func (f *Fixture) AppStatus(name, appType string, ttl, age time.Duration) string {
	f.T.Helper()
	id := sim.NewUUID()
	_, err := f.DB.Pool.Exec(f.Ctx, `INSERT INTO core_appstatus (pulp_id, app_type, name, ttl, last_heartbeat)
		VALUES ($1, $2, $3, make_interval(secs => $4), now() - make_interval(secs => $5))`,
		id, appType, name, ttl.Seconds(), age.Seconds())
	require.NoError(f.T, err)
	return id
}

// Worker inserts a worker's core_appstatus row (ttl 30s) and returns its pulp_id.
func (f *Fixture) Worker(name string, age time.Duration) string {
	return f.AppStatus(name, "worker", 30*time.Second, age)
}

// Task inserts a core_task row. appLock may be "" (NULL); finishedAgo < 0
// leaves finished_at NULL.
func (f *Fixture) Task(state, appLock string, reserved []string, finishedAgo time.Duration) string {
	f.T.Helper()
	id := sim.NewUUID()
	var lock any
	if appLock != "" {
		lock = appLock
	}
	var finished any
	if finishedAgo >= 0 {
		finished = finishedAgo.Seconds()
	}
	_, err := f.DB.Pool.Exec(f.Ctx, `INSERT INTO core_task (pulp_id, state, name, app_lock_id, reserved_resources_record, pulp_domain_id, finished_at)
		VALUES ($1, $2, 'pulp_rpm.app.tasks.synchronize', $3, $4, '00000000-0000-4000-8000-000000000001',
		        CASE WHEN $5::float8 IS NULL THEN NULL ELSE now() - make_interval(secs => $5::float8) END)`,
		id, state, lock, reserved, finished)
	require.NoError(f.T, err)
	return id
}

// ProgressReport inserts a core_progressreport row of the task.
func (f *Fixture) ProgressReport(taskID, state string) string {
	f.T.Helper()
	id := sim.NewUUID()
	_, err := f.DB.Pool.Exec(f.Ctx, `INSERT INTO core_progressreport (pulp_id, message, code, state, task_id) VALUES ($1, 'Downloading', 'sync.downloading', $2, $3)`, id, state, taskID)
	require.NoError(f.T, err)
	return id
}

// Acquire writes the locks of a task the way Pulp's acquire script does: the
// task key and exclusive keys set to the owner, the owner added to shared
// sets, and (unless legacy) every key in the owner's registry.
func (f *Fixture) Acquire(owner, taskID string, reserved []string, legacy bool) {
	f.T.Helper()
	rdb := f.Redis.Client
	keys := []string{judge.TaskKeyPrefix + taskID}
	require.NoError(f.T, rdb.Set(f.Ctx, judge.TaskKeyPrefix+taskID, owner, 0).Err())
	for _, r := range reserved {
		if name, shared := cutShared(r); shared {
			require.NoError(f.T, rdb.SAdd(f.Ctx, judge.ResourceKeyPrefix+name, owner).Err())
			keys = append(keys, judge.ResourceKeyPrefix+name)
		} else {
			require.NoError(f.T, rdb.Set(f.Ctx, judge.ResourceKeyPrefix+r, owner, 0).Err())
			keys = append(keys, judge.ResourceKeyPrefix+r)
		}
	}
	if legacy {
		return
	}
	for _, k := range keys {
		require.NoError(f.T, rdb.SAdd(f.Ctx, redislocks.OwnerLocksPrefix+owner, k).Err())
	}
	require.NoError(f.T, rdb.SAdd(f.Ctx, redislocks.ActiveOwnersKey, owner).Err())
}

func cutShared(r string) (string, bool) {
	if len(r) > 7 && r[:7] == "shared:" {
		return r[7:], true
	}
	return r, false
}

// Get returns a string key's value, "" when it has none.
func (f *Fixture) Get(key string) string {
	v, err := f.Redis.Client.Get(f.Ctx, key).Result()
	if err != nil {
		return ""
	}
	return v
}

// Members returns a set's members.
func (f *Fixture) Members(key string) []string {
	v, _ := f.Redis.Client.SMembers(f.Ctx, key).Result()
	return v
}

// TaskRow reads back what a pass may change of a core_task row.
func (f *Fixture) TaskRow(id string) (state string, appLock *string, reason *string, finished *time.Time) {
	f.T.Helper()
	require.NoError(f.T, f.DB.Pool.QueryRow(f.Ctx,
		`SELECT state, app_lock_id::text, error->>'reason', finished_at FROM core_task WHERE pulp_id = $1`, id).
		Scan(&state, &appLock, &reason, &finished))
	return
}
