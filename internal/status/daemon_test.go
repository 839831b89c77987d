package status

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/internal/daemon"
	"github.com/lock-reaper/lock-reaper/internal/sim"
	"github.com/lock-reaper/lock-reaper/internal/testing/webtest"
)

// TestDaemonServesPages: `lock-reaper run` serves the pages at / beside
// /metrics, from the snapshot its pass judged, and says what the pass
// released; the other methods are refused on every path, /metrics's too.
func TestDaemonServesPages(t *testing.T) {
	f := newFixture(t, sim.SmallIncident())
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
	// The state after the pass: what it released is neither stale nor
	// counted, and its pass is in the history, as run's.
	require.Equal(t, v.Report.Summary.Released, v.ReleasedCount())
	require.Equal(t, len(v.Holdings())-v.ReleasedCount(), v.Current())
	require.Equal(t, v.Current(), v.HoldingCount(), "the overview counts the holdings held after the pass")
	// The tasks it canceled or requeued are no longer lost: the page shows
	// them as the pass left them, from its own outcomes.
	require.Positive(t, v.Report.Summary.TasksUpdated)
	require.Equal(t, v.Report.Summary.TasksUpdated, v.TasksUpdated)
	for _, tj := range v.Tasks() {
		require.NotEqual(t, f.inc.DeadOwner, tj.Owner, "task %s of the dead worker, updated by the pass, is still listed", tj.ID)
	}
	if dead, ok := v.Owner(f.inc.DeadOwner); ok {
		require.Zero(t, dead.Stale, "the dead owner's released holdings are not stale any more")
	}
	require.Zero(t, v.OwnersByLiveness["dead"], "the dead owner holds nothing after the pass")
	require.NotEmpty(t, v.Passes)
	require.Equal(t, "run", v.Passes[0].Mode)
	require.Equal(t, v.Report.Summary.Released, v.Passes[0].Released)
	var blocked string
	for _, q := range v.Queue {
		for _, l := range q.Chain {
			if l.Released && l.Holder.Owner == f.inc.DeadOwner && blocked == "" {
				blocked = q.Row.ID
			}
		}
	}
	require.NotEmpty(t, blocked)
	code, body := webtest.Do(t, http.MethodGet, base+"/tasks/"+blocked)
	require.Equal(t, http.StatusOK, code)
	assert.NotContains(t, between(body, "<h2>Resources it reserves</h2>", "</table>"), f.inc.DeadOwner,
		"a released holder is not named as holding the task's resources")

	code, body = webtest.Do(t, http.MethodGet, base+"/")
	require.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, "from a pass of run (the daemon)", "the daemon's pass, as the history names it")
	assert.Contains(t, between(body, "<dt>Holdings</dt>", "</dd>"), ">"+num(v.Current())+"<", "the holdings held after the pass")
	if v.TasksUpdated > 0 {
		assert.Contains(t, between(body, `id="tasks-updated"`, "</p>"), "updated "+plural(v.TasksUpdated, "task"))
	}
	assert.Contains(t, between(body, `id="passes-answer"`, "</p>"), "Last pass: a pass of run (the daemon)")
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

// TestDaemonInspectsAfterALargePass: under a memory limit, a pass whose
// findings are many does not keep its snapshot through its writes for the
// page (KeepsSnapshot); the page reads an inspection of its own once the
// pass is over, which shows Redis as the pass left it.
func TestDaemonInspectsAfterALargePass(t *testing.T) {
	f := newFixture(t, sim.SmallIncident())
	// Room for the view of a handful of holdings only.
	softMemoryLimit = func() int64 { return 4 * 8 * viewBytesPerHolding }
	t.Cleanup(func() { softMemoryLimit = defaultSoftMemoryLimit })
	pages := New(f.r, Options{})
	require.True(t, pages.KeepsSnapshot(8))
	require.False(t, pages.KeepsSnapshot(9))

	d, err := daemon.New(f.r, daemon.Config{Listen: "127.0.0.1:0", Schedule: "@every 1h", Pages: pages})
	require.NoError(t, err)
	require.NoError(t, d.Start(context.Background()))
	t.Cleanup(func() { d.Stop(); pages.Wait() })
	require.Eventually(t, func() bool { return pages.View() != nil }, 30*time.Second, 20*time.Millisecond)
	v := pages.View()
	require.NotNil(t, v.Report)
	require.Greater(t, v.Report.Summary.Released, 8, "a pass large for the limit")
	require.Zero(t, v.ReleasedCount(), "the inspection was read after the pass: it holds nothing the pass released")
	require.Equal(t, len(v.Holdings()), v.Current())
	require.True(t, v.Taken.After(v.Report.StartedAt.Add(time.Duration(v.Report.DurationMS)*time.Millisecond)),
		"the view's snapshot was read after the pass")
	for _, jd := range v.Holdings() {
		require.NotEqual(t, f.inc.DeadOwner, jd.Owner, "the dead owner's holdings were released")
	}
	require.Zero(t, v.OwnersByLiveness["dead"])
	require.Zero(t, v.Blocked)
}
