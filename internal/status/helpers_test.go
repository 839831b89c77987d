package status

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/internal/sim"
	"github.com/lock-reaper/lock-reaper/internal/testing/testenv"
	"github.com/lock-reaper/lock-reaper/internal/testing/webtest"
	"github.com/lock-reaper/lock-reaper/reaper"
)

// fixture is an incident in a test's own Redis database and PostgreSQL
// database, a reaper on them and a status server of one inspection.
type fixture struct {
	t   *testing.T
	rdb *testenv.Redis
	db  *testenv.Database
	inc *sim.Incident
	r   *reaper.Reaper
	srv *Server
	web *httptest.Server
}

func newFixture(t *testing.T, spec sim.IncidentSpec) *fixture {
	t.Helper()
	ctx := context.Background()
	f := &fixture{t: t, rdb: testenv.NewRedis(t), db: testenv.NewDatabase(t)}
	inc, err := sim.BuildIncident(ctx, f.rdb.Client, f.db.Pool, spec)
	require.NoError(t, err)
	f.inc = inc
	stop := inc.KeepAliveInBackground(context.WithoutCancel(ctx), f.db.Pool)
	t.Cleanup(func() { _ = stop() })
	f.r, err = reaper.New(passConfig(), f.rdb.Client, f.db.Pool, nil)
	require.NoError(t, err)
	f.srv = New(f.r, Options{PageSize: 20})
	f.web = httptest.NewServer(f.srv)
	t.Cleanup(f.web.Close)
	return f
}

// inspect publishes a fresh inspection, as `lock-reaper status` does.
func (f *fixture) inspect() *View {
	f.t.Helper()
	in, err := f.r.Inspect(context.Background(), reaper.InspectOptions{})
	require.NoError(f.t, err)
	f.srv.Publish(context.Background(), in, time.Millisecond, time.Now().Add(time.Minute))
	return f.srv.View()
}

// get fetches a path and returns its status and body.
func (f *fixture) get(path string) (int, string) {
	f.t.Helper()
	return webtest.Do(f.t, http.MethodGet, f.web.URL+path)
}

// passConfig is the default configuration with the tests' heartbeat_recheck.
func passConfig() reaper.Config {
	cfg := reaper.DefaultConfig()
	cfg.HeartbeatRecheck = testenv.HeartbeatRecheck
	return cfg
}
