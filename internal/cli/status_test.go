package cli

import (
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/internal/exitcode"
	"github.com/lock-reaper/lock-reaper/internal/sim"
	"github.com/lock-reaper/lock-reaper/internal/testing/testenv"
	"github.com/lock-reaper/lock-reaper/internal/testing/webtest"
	"github.com/lock-reaper/lock-reaper/internal/testtool"
)

// TestStatusServesThePages runs `lock-reaper status` as an operator would
// on a laptop: it serves the incident's pages from a read-only inspection,
// refuses every other method, writes nothing, and REAPER_LISTEN (the
// daemon's address) does not move it.
func TestStatusServesThePages(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r, db := testenv.NewRedis(t), testenv.NewDatabase(t)
	spec := sim.IncidentOf20260724()
	spec.DeadTaskLocks, spec.DeadResourceLocks, spec.QueuedTasks = 20, 15, 6
	inc, err := sim.BuildIncident(ctx, r.Client, db.Pool, spec)
	require.NoError(t, err)
	stopBeat := inc.KeepAliveInBackground(context.WithoutCancel(ctx), db.Pool)
	t.Cleanup(func() { _ = stopBeat() })
	keys := r.Client.DBSize(ctx).Val()
	env := servicesEnv(r, db)
	env["REAPER_LISTEN"] = closedAddr(t)

	runCtx, cancel := context.WithCancel(ctx)
	var stderr testtool.SyncBuffer
	exit := make(chan int, 1)
	go func() {
		exit <- Main(runCtx, Env{Args: []string{"status", "--listen", "127.0.0.1:0", "--every", "1s"}, Stdout: io.Discard, Stderr: &stderr,
			Version: "test", LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }})
	}()
	addr := regexp.MustCompile(`on http://(127\.0\.0\.1:\d+)/`)
	var base string
	require.Eventually(t, func() bool {
		if m := addr.FindStringSubmatch(stderr.String()); m != nil {
			base = "http://" + m[1]
			return true
		}
		return false
	}, 30*time.Second, 20*time.Millisecond, "status says where it serves: %s", stderr.String())
	require.Eventually(t, func() bool { code, _ := webtest.Do(t, http.MethodGet, base+"/"); return code == http.StatusOK }, 30*time.Second, 50*time.Millisecond)
	_, body := webtest.Do(t, http.MethodGet, base+"/")
	require.Contains(t, body, "<strong>Yes:</strong>")
	require.Contains(t, body, "from a read-only inspection")
	require.NotContains(t, body, db.URL)
	_, body = webtest.Do(t, http.MethodGet, base+"/holdings?owner="+strings.ReplaceAll(inc.DeadOwner, "@", "%40"))
	require.Contains(t, body, "owner-dead")
	for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodDelete} {
		code, _ := webtest.Do(t, m, base+"/")
		require.Equal(t, http.StatusMethodNotAllowed, code, m)
	}
	time.Sleep(1100 * time.Millisecond) // another inspection
	cancel()
	require.Equal(t, exitcode.OK, <-exit, stderr.String())
	require.Equal(t, keys, r.Client.DBSize(ctx).Val(), "status wrote nothing to Redis, not even suspects")
}

// TestRunStatusPageOff: status_page false leaves / unserved.
func TestRunStatusPageOff(t *testing.T) {
	t.Parallel()
	r, db := testenv.NewRedis(t), testenv.NewDatabase(t)
	env := servicesEnv(r, db)
	env["REAPER_STATUS_PAGE"] = "false"
	run := startRun(t, env, "--listen", "127.0.0.1:0", "--schedule", "@every 1h")
	code, _ := run.get(t, "/")
	require.Equal(t, http.StatusNotFound, code)
	code, _ = run.get(t, "/metrics")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, 0, run.stop(t))
}
