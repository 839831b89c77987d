package status

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/internal/sim"
	"github.com/lock-reaper/lock-reaper/internal/testing/passtest"
	"github.com/lock-reaper/lock-reaper/internal/testing/webtest"
	"github.com/lock-reaper/lock-reaper/reaper"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
)

// TestOverviewNamesTheUncommittedWriteSession: a pass of run left a live
// API process's shared membership because another session sat in a
// transaction that inserted a task row; the overview's guards name the
// guard, that session's pid and its transaction's age.
func TestOverviewNamesTheUncommittedWriteSession(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pf := passtest.New(t)
	const owner = "7@api-page"
	api := pf.AppStatus(owner, "api", 120*time.Second, time.Second)
	reserved := []string{"shared:domain-page"}
	pf.Acquire(owner, pf.Task(judge.StateCompleted, api, reserved, 10*time.Minute), reserved, true)
	tx, err := pf.DB.Pool.Begin(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
	_, err = tx.Exec(ctx, `INSERT INTO core_task (pulp_id, state, name, reserved_resources_record, pulp_domain_id)
		VALUES ($1, 'waiting', 'pulpcore.app.tasks.base.general_update', '{}', '00000000-0000-4000-8000-000000000001')`, sim.NewUUID())
	require.NoError(t, err)
	var pid int32
	require.NoError(t, tx.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid))

	r, err := reaper.New(reaper.DefaultConfig(), pf.Redis.Client, pf.DB.Pool, nil)
	require.NoError(t, err)
	rep, err := r.RunOnce(ctx, reaper.Options{Mode: reaper.ModeOnce})
	require.NoError(t, err)
	srv := New(r, Options{})
	web := httptest.NewServer(srv)
	t.Cleanup(web.Close)
	srv.PassDone(nil, rep, time.Now().Add(time.Minute))
	srv.Wait()

	_, body := webtest.Do(t, http.MethodGet, web.URL+"/")
	require.Contains(t, body, "<strong>uncommitted-task-write</strong>")
	require.Contains(t, body, fmt.Sprintf("session pid %d holds an uncommitted write to core_task, its transaction open for ", pid))
}
