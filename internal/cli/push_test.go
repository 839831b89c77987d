package cli

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/internal/exitcode"
	"github.com/lock-reaper/lock-reaper/internal/sim"
	"github.com/lock-reaper/lock-reaper/internal/testing/promtest"
	"github.com/lock-reaper/lock-reaper/internal/testing/testenv"
)

// pushed is one request a fake Pushgateway received.
type pushed struct {
	method, path, user, password string
	samples                      map[string]float64
}

// fakePushgateway is a real HTTP server that records what is pushed to it
// and answers with status.
type fakePushgateway struct {
	srv    *httptest.Server
	mu     sync.Mutex
	pushes []pushed
	status int
}

func newFakePushgateway(t *testing.T) *fakePushgateway {
	t.Helper()
	g := &fakePushgateway{status: http.StatusOK}
	g.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := pushed{method: r.Method, path: r.URL.Path, samples: map[string]float64{}}
		p.user, p.password, _ = r.BasicAuth()
		dec := expfmt.NewDecoder(r.Body, expfmt.ResponseFormat(r.Header))
		var mfs []*dto.MetricFamily
		for {
			var mf dto.MetricFamily
			if err := dec.Decode(&mf); err != nil {
				if err != io.EOF {
					http.Error(w, err.Error(), http.StatusBadRequest)
					return
				}
				break
			}
			mfs = append(mfs, &mf)
		}
		p.samples = promtest.Samples(mfs)
		g.mu.Lock()
		g.pushes = append(g.pushes, p)
		status := g.status
		g.mu.Unlock()
		w.WriteHeader(status)
	}))
	t.Cleanup(g.srv.Close)
	return g
}

// url is the gateway's URL with basic-auth credentials in it.
func (g *fakePushgateway) url() string {
	return strings.Replace(g.srv.URL, "http://", "http://reaper:s3cret@", 1)
}

func (g *fakePushgateway) received() []pushed {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]pushed(nil), g.pushes...)
}

// TestOncePushesMetrics: `once` with pushgateway_url pushes the pass's
// metrics with add semantics (POST) under job lock_reaper, with the time of
// the last success only when the pass completed; audit pushes nothing, and
// a failed push leaves the exit code alone and keeps the password out of
// the logs.
func TestOncePushesMetrics(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r, db := testenv.NewRedis(t), testenv.NewDatabase(t)
	spec := sim.IncidentSpec{DeadTaskLocks: 8, DeadResourceLocks: 4, DeadRunning: 2, LiveWorkers: 3}
	inc, err := sim.BuildIncident(ctx, r.Client, db.Pool, spec)
	require.NoError(t, err)
	gw := newFakePushgateway(t)
	env := servicesEnv(r, db)
	env["REAPER_PUSHGATEWAY_URL"] = gw.url()

	code, _, stderr := run(t, env, "audit")
	require.Equal(t, exitcode.Findings, code, stderr)
	require.Empty(t, gw.received(), "a dry run pushes nothing")

	code, _, stderr = run(t, env, "once")
	require.Equal(t, exitcode.OK, code, stderr)
	require.NotContains(t, stderr, "\r", "no progress line off a terminal")
	pushes := gw.received()
	require.Len(t, pushes, 1)
	p := pushes[0]
	require.Equal(t, http.MethodPost, p.method, "add semantics: POST, not PUT")
	require.Equal(t, "/metrics/job/lock_reaper", p.path)
	require.Equal(t, "reaper", p.user)
	require.Equal(t, "s3cret", p.password)
	require.Equal(t, 1.0, p.samples[`lock_reaper_passes_total{result="success"}`])
	require.Equal(t, 0.0, p.samples[`lock_reaper_passes_total{result="failed"}`])
	require.Equal(t, float64(sim.Count(inc.Stale, inc.DeadOwner, sim.KindTask)),
		p.samples[`lock_reaper_holdings_released_total{kind="task",verdict="owner-dead"}`]+
			p.samples[`lock_reaper_holdings_released_total{kind="task",verdict="task-finished"}`])
	require.Equal(t, 2.0, p.samples[`lock_reaper_tasks_updated_total{verdict="lost"}`])
	require.Contains(t, p.samples, "lock_reaper_last_success_timestamp_seconds")
	require.Contains(t, p.samples, `lock_reaper_build_info{goversion="`+runtime.Version()+`",version="test"}`)
	for key := range p.samples {
		require.True(t, strings.HasPrefix(key, "lock_reaper_"), "only lock-reaper's own metrics are pushed: %s", key)
	}

	// A pass that fails pushes its failure, without the time of the last
	// success, so the Pushgateway keeps the one pushed above.
	failing := servicesEnv(r, db)
	failing["REAPER_PUSHGATEWAY_URL"] = gw.url()
	failing["REAPER_REDIS_URL"] = "redis://" + closedAddr(t) + "/0"
	failing["REAPER_REDIS_TIMEOUT"] = "1s"
	code, _, stderr = run(t, failing, "once")
	require.Equal(t, exitcode.Failed, code, stderr)
	pushes = gw.received()
	require.Len(t, pushes, 2)
	require.Equal(t, http.MethodPost, pushes[1].method)
	require.Equal(t, 1.0, pushes[1].samples[`lock_reaper_passes_total{result="failed"}`])
	require.NotContains(t, pushes[1].samples, "lock_reaper_last_success_timestamp_seconds")

	// The Pushgateway refuses: the pass's own exit code stands, the log says
	// so without the password.
	gw.mu.Lock()
	gw.status = http.StatusInternalServerError
	gw.mu.Unlock()
	code, _, stderr = run(t, env, "once")
	require.Equal(t, exitcode.OK, code, stderr)
	require.Contains(t, stderr, "metrics push failed")
	require.NotContains(t, stderr, "s3cret")
}
