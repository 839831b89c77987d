package status

import (
	"context"
	"encoding/json"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"
	"weak"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/internal/sim"
	"github.com/lock-reaper/lock-reaper/reaper/history"
)

// pageBound is the most bytes any page of these tests may have: a page is
// a page of rows, whatever the view holds.
const pageBound = 128 << 10

// TestPassesBoundedOverAForeignHistory: sixty entries of 2 MB written into
// the history by someone else are skipped unread and said so; /passes and
// the overview stay small, and the reaper's own passes are shown.
func TestPassesBoundedOverAForeignHistory(t *testing.T) {
	f := newFixture(t, sim.SmallIncident())
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Second)
	require.NoError(t, history.Record(ctx, f.rdb.Client, history.DefaultPrefix, history.Entry{At: now.Add(-time.Minute), Mode: "once", Released: 1067}))
	big, err := json.Marshal(history.Entry{At: now, Mode: "once", Error: strings.Repeat("x", 2<<20)})
	require.NoError(t, err)
	for range 60 {
		require.NoError(t, f.rdb.Client.LPush(ctx, history.Key(history.DefaultPrefix), big).Err())
	}
	v := f.inspect()
	require.Equal(t, 1, len(v.Passes), "only the reaper's own pass")
	for _, p := range []string{"/passes", "/"} {
		code, body := f.get(p)
		require.Equal(t, http.StatusOK, code, p)
		require.Less(t, len(body), pageBound, p)
		assert.Contains(t, between(body, `id="passes-skipped"`, "</p>"), "60 entries longer than 4096 bytes", p)
		assert.Contains(t, body, "1,067", p)
	}
}

// TestControlCharactersFromTheHistoryAreHarmless: ESC and BEL in an entry
// of the history (its mode, guards and error) never reach a page raw.
func TestControlCharactersFromTheHistoryAreHarmless(t *testing.T) {
	f := newFixture(t, sim.SmallIncident())
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Second)
	require.NoError(t, history.Record(ctx, f.rdb.Client, history.DefaultPrefix, history.Entry{At: now.Add(-time.Minute),
		Mode: "once\x1b[2J", Guards: []string{"\x07max_releases\x1b]0;title\x07"}, Released: 3}))
	require.NoError(t, history.Record(ctx, f.rdb.Client, history.DefaultPrefix, history.Entry{At: now,
		Mode: "run\x1b[31m", Error: "Redis \x1b]8;;http://x\x07went away\x07"}))
	f.inspect()
	for _, p := range []string{"/passes", "/", "/queue?blocked=1"} {
		code, body := f.get(p)
		require.Equal(t, http.StatusOK, code, p)
		require.NotContains(t, body, "\x1b", p)
		require.NotContains(t, body, "\x07", p)
	}
	_, body := f.get("/passes")
	assert.Contains(t, body, `\x1b[2J`, "shown in its quoted form")
	assert.Contains(t, body, `\amax_releases`)
}

// TestPagesBoundedOverALargeView: a dead worker with hundreds of lost
// tasks and a long history of passes: the overview shows the first tasks
// and links to the rest, a page at a time; /passes lists a page of passes;
// no page grows with the view.
func TestPagesBoundedOverALargeView(t *testing.T) {
	spec := sim.SmallIncident()
	spec.DeadTaskLocks, spec.DeadRunning = 400, 300
	f := newFixture(t, spec)
	ctx := context.Background()
	start := time.Now().UTC().Add(-20 * time.Hour).Truncate(time.Second)
	for i := range 300 {
		require.NoError(t, history.Record(ctx, f.rdb.Client, history.DefaultPrefix,
			history.Entry{At: start.Add(time.Duration(i) * time.Minute), Mode: "run", Stale: 400, Guards: []string{"max_releases"}}))
	}
	v := f.inspect()
	require.GreaterOrEqual(t, len(v.Tasks()), 300)
	require.Len(t, v.Passes, 300)

	_, body := f.get("/")
	tasks := between(body, `id="judged-tasks"`, "</table>")
	require.Equal(t, overviewRows, strings.Count(tasks, "<tr><td"), "the first tasks only")
	assert.Contains(t, between(body, `id="tasks-more"`, "</p>"), plural(len(v.Tasks())-overviewRows, "more task"))

	code, body := f.get("/lost-tasks?page=2")
	require.Equal(t, http.StatusOK, code)
	assert.Equal(t, 20, strings.Count(between(body, `id="judged-tasks"`, "</table>"), "<tr><td"), "a page of the fixture's size")
	assert.Contains(t, body, "Page 2 of")

	_, body = f.get("/passes")
	assert.Equal(t, passesPerPage, strings.Count(between(body, `id="passes-table"`, "</table>"), "<tr><td"))
	assert.Contains(t, body, `rel="next"`)

	task := v.Tasks()[0].ID
	for _, p := range []string{"/", "/holdings", "/owners", "/queue", "/passes", "/passes?page=3", "/lost-tasks", "/tasks/" + task} {
		code, body := f.get(p)
		require.Contains(t, []int{http.StatusOK, http.StatusNotFound}, code, p)
		require.Less(t, len(body), pageBound, p)
	}
}

// TestTaskPageExplainsOnItsOwnHoldings: a task page hands explain the
// task's own lock and its resources' holdings only, found through the
// view's index, not every holding of the view (which explain would index
// whole for each page served), on a read-only view as on a pass's.
func TestTaskPageExplainsOnItsOwnHoldings(t *testing.T) {
	spec := sim.SmallIncident()
	spec.DeadTaskLocks, spec.DeadRunning = 400, 300
	f := newFixture(t, spec)
	v := f.inspect()
	require.Nil(t, v.released, "a read-only view: nothing released")
	id := v.Tasks()[0].ID
	ex, err := f.r.ExplainedTask(context.Background(), id)
	require.NoError(t, err)
	on := v.explainedOn(ex)
	require.Less(t, len(on.Plan.Holdings), 10, "of %d", len(v.Holdings()))
	require.Equal(t, v.relevant(id, ex.Row.Reserved), on.Plan.Holdings)
	code, body := f.get("/tasks/" + id)
	require.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, "Task lock")
}

// TestShedViewNotKeptByTheTaskPage: once a task page was served, shedding
// the view still lets its inspection go: the task page's cache of
// explanations does not hold the view.
func TestShedViewNotKeptByTheTaskPage(t *testing.T) {
	f := newFixture(t, sim.SmallIncident())
	v := f.inspect()
	code, _ := f.get("/tasks/" + v.Tasks()[0].ID)
	require.Equal(t, http.StatusOK, code)
	in := weak.Make(v.In)
	holdings := len(v.Holdings())
	v = nil
	softMemoryLimit = func() int64 { return int64(holdings) * viewBytesPerHolding * 2 }
	t.Cleanup(func() { softMemoryLimit = defaultSoftMemoryLimit })
	f.srv.Shed()
	require.NotNil(t, f.srv.View().ShedAt)
	runtime.GC()
	runtime.GC()
	require.True(t, in.Value() == nil, "the shed view's inspection is let go")
}
