package cli

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/internal/config"
	"github.com/lock-reaper/lock-reaper/reaper"
)

// requestRecorder is a real HTTP server that records the path and query of
// every request and answers with status.
type requestRecorder struct {
	srv    *httptest.Server
	mu     sync.Mutex
	paths  []string
	status int
}

func newRequestRecorder(t *testing.T, status int) *requestRecorder {
	t.Helper()
	rr := &requestRecorder{status: status}
	rr.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rr.mu.Lock()
		rr.paths = append(rr.paths, r.URL.Path+"?"+r.URL.RawQuery)
		rr.mu.Unlock()
		w.WriteHeader(rr.status)
	}))
	t.Cleanup(rr.srv.Close)
	return rr
}

func (rr *requestRecorder) requests() []string {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	return append([]string(nil), rr.paths...)
}

// pushWithLog runs the push of a completed real pass as `once` does, with
// its log in a buffer.
func pushWithLog(t *testing.T, pushURL string) string {
	t.Helper()
	var logs bytes.Buffer
	s := &setup{cfg: config.Config{PushgatewayURL: pushURL}, log: slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	pushPass(context.Background(), s, "test", &reaper.Report{Mode: reaper.ModeOnce}, nil)
	return logs.String()
}

// TestPushURLWithPathAndQuery: a Pushgateway behind a path prefix and a
// query string (a proxy's token) gets the grouping path under the prefix
// and the query on the request, and no query value reaches the log when
// the push fails.
func TestPushURLWithPathAndQuery(t *testing.T) {
	t.Parallel()
	gw := newRequestRecorder(t, http.StatusOK)
	pushWithLog(t, gw.srv.URL+"/pushgateway/?password=s3cret&tenant=ops")
	pushWithLog(t, gw.srv.URL+"/pushgateway")
	require.Equal(t, []string{
		"/pushgateway/metrics/job/lock_reaper?password=s3cret&tenant=ops",
		"/pushgateway/metrics/job/lock_reaper?",
	}, gw.requests())

	refusing := newRequestRecorder(t, http.StatusBadGateway)
	logs := pushWithLog(t, "http://reaper:pa55@"+refusing.srv.Listener.Addr().String()+"/pgw?password=s3cret&token=t0ken")
	require.Len(t, refusing.requests(), 1)
	require.Contains(t, logs, "metrics push failed")
	require.Contains(t, logs, "/pgw/metrics/job/lock_reaper", "the log names where the push went")
	for _, secret := range []string{"s3cret", "t0ken", "pa55"} {
		require.NotContains(t, logs, secret)
	}

	// Nothing listening: the transport's error quotes no query either.
	addr := refusing.srv.Listener.Addr().String()
	refusing.srv.Close()
	logs = pushWithLog(t, "http://"+addr+"/pgw?password=s3cret")
	require.Contains(t, logs, "metrics push failed")
	require.NotContains(t, logs, "s3cret")
}
