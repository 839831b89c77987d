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
	"github.com/lock-reaper/lock-reaper/internal/redisserver"
	"github.com/lock-reaper/lock-reaper/internal/sim"
	"github.com/lock-reaper/lock-reaper/internal/testing/testenv"
	"github.com/lock-reaper/lock-reaper/internal/testing/webtest"
)

// TestStatusServesThePages runs `lock-reaper status` as an operator would
// on a laptop: it serves the incident's pages from a read-only inspection,
// refuses every other method, writes nothing, and REAPER_LISTEN (the
// daemon's address) does not move it.
func TestStatusServesThePages(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r, db := testenv.NewRedis(t), testenv.NewDatabase(t)
	inc, err := sim.BuildIncident(ctx, r.Client, db.Pool, sim.SmallIncident())
	require.NoError(t, err)
	stopBeat := inc.KeepAliveInBackground(context.WithoutCancel(ctx), db.Pool)
	t.Cleanup(func() { _ = stopBeat() })
	keys := r.Client.DBSize(ctx).Val()
	env := servicesEnv(r, db)
	env["REAPER_LISTEN"] = closedAddr(t)

	st := startStatus(t, env, "1s")
	base := st.base
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
	st.stop()
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

// TestStatusDoctorJudgesTheFirstInspection: `lock-reaper status` hands
// doctor its first inspection instead of letting it read a snapshot of its
// own beside it (two would not fit a memory limit sized for one). Counted
// on a Redis of the test's own, in MGETs (doctor's own checks send none):
// until doctor's results are on the page, status sends as many as one
// audit does, where doctor's own read doubled them.
func TestStatusDoctorJudgesTheFirstInspection(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv, db := redisserver.Start(t), testenv.NewDatabase(t)
	_, err := sim.BuildIncident(ctx, srv.Client, db.Pool, sim.SmallIncident())
	require.NoError(t, err)
	env := map[string]string{"REAPER_REDIS_URL": srv.URL(0), "REAPER_DATABASE_URL": db.URL, "REAPER_LOG_FORMAT": "json"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	mgets := func() string {
		stats := srv.Client.Info(ctx, "commandstats").Val()
		m := regexp.MustCompile(`(?m)^cmdstat_mget:calls=(\d+),`).FindStringSubmatch(stats)
		require.NotNil(t, m, stats)
		return m[1]
	}
	require.NoError(t, srv.Client.ConfigResetStat(ctx).Err())
	require.Equal(t, exitcode.Findings, Main(ctx, Env{Args: []string{"audit"}, Stdout: io.Discard, Stderr: io.Discard, Version: "test", LookupEnv: lookup}))
	oneRead := mgets()
	require.NoError(t, srv.Client.ConfigResetStat(ctx).Err())

	st := startStatus(t, env, "1h")
	require.Eventually(t, func() bool {
		code, body := webtest.Do(t, http.MethodGet, st.base+"/")
		return code == http.StatusOK && strings.Contains(body, "Overall: <strong>")
	}, 30*time.Second, 50*time.Millisecond, "doctor's results on the overview")
	st.stop()
	require.Equal(t, oneRead, mgets(), "one inspection, judged by the page and by doctor")
}

// statusRun is `lock-reaper status` running in the background.
type statusRun struct {
	// base is where it serves the page, http://127.0.0.1:PORT.
	base string
	stop func()
}

// startStatus runs `lock-reaper status --every every` with env, and waits
// until it says where it serves the page; stop ends it and requires exit 0.
func startStatus(t *testing.T, env map[string]string, every string) statusRun {
	t.Helper()
	runCtx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	var stderr testenv.SyncBuffer
	exit := make(chan int, 1)
	go func() {
		exit <- Main(runCtx, Env{Args: []string{"status", "--listen", "127.0.0.1:0", "--every", every}, Stdout: io.Discard, Stderr: &stderr,
			Version: "test", LookupEnv: testenv.LookupEnv(env)})
	}()
	addr := regexp.MustCompile(`on http://(127\.0\.0\.1:\d+)/`)
	var run statusRun
	require.Eventually(t, func() bool {
		if m := addr.FindStringSubmatch(stderr.String()); m != nil {
			run.base = "http://" + m[1]
			return true
		}
		return false
	}, 30*time.Second, 20*time.Millisecond, "status says where it serves: %s", stderr.String())
	run.stop = func() {
		cancel()
		require.Equal(t, exitcode.OK, <-exit, stderr.String())
	}
	return run
}
