package status

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/internal/daemon"
	"github.com/lock-reaper/lock-reaper/internal/testing/webtest"
)

// TestDaemonServesPages: `lock-reaper run` serves the pages at / beside
// /metrics, from the snapshot its pass judged, and says what the pass
// released; the other methods are refused on every path, /metrics's too.
func TestDaemonServesPages(t *testing.T) {
	f := newFixture(t, smallIncident())
	pages := New(f.r, Options{})
	d, err := daemon.New(f.r, daemon.Config{Listen: "127.0.0.1:0", Schedule: "@every 1h", Pages: pages})
	require.NoError(t, err)
	require.NoError(t, d.Start(context.Background()))
	t.Cleanup(func() { d.Stop(); pages.Wait() })
	base := "http://" + d.Addr().String()
	require.Eventually(t, func() bool { return pages.View() != nil }, 30*time.Second, 20*time.Millisecond)
	v := pages.View()
	require.NotNil(t, v.Report)
	require.Positive(t, v.Report.Summary.Released)
	require.Zero(t, v.Blocked, "the pass released every stale lock in the queue's way")
	released := 0
	for _, q := range v.Queue {
		for _, l := range q.Chain {
			if l.Released {
				released++
				assert.Contains(t, l.Freed, "released by the pass of")
			}
		}
	}
	require.Positive(t, released)

	code, body := webtest.Do(t, http.MethodGet, base+"/")
	require.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, "from pass of mode once")
	code, body = webtest.Do(t, http.MethodGet, base+"/queue")
	require.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, "unblocked by the last pass")
	code, _ = webtest.Do(t, http.MethodGet, base+"/metrics")
	require.Equal(t, http.StatusOK, code)
	for _, p := range []string{"/", "/metrics", "/livez", "/queue", "/holdings"} {
		for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodPatch} {
			code, _ := webtest.Do(t, m, base+p)
			assert.Equal(t, http.StatusMethodNotAllowed, code, "%s %s", m, p)
		}
	}
}
