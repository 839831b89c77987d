package status

import (
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/internal/sim"
)

// TestOverviewLeadsWithTheCause: the overview names the dead worker that
// blocks the queue, once, with its heartbeat, its holdings and what ends it;
// the blocked queue lists its tasks under it instead of repeating it per task.
func TestOverviewLeadsWithTheCause(t *testing.T) {
	f := newFixture(t, sim.SmallIncident())
	v := f.inspect()
	causes := v.BlockingCauses()
	require.Len(t, causes, 1, "one dead worker blocks the queue")
	c := causes[0]
	require.Equal(t, f.inc.DeadOwner, c.Owner)
	require.Equal(t, v.Blocked, len(c.Tasks), "every blocked task is under it")
	require.Equal(t, 70, c.Holdings)
	for i := 1; i < len(c.Tasks); i++ {
		require.Less(t, c.Tasks[i-1].Position, c.Tasks[i].Position, "fetch order within the cause")
	}

	_, body := f.get("/")
	answer := between(body, `id="stuck-answer"`, "</ul>")
	assert.Contains(t, answer, plural(v.Blocked, "waiting task")+"</a> blocked by")
	assert.Contains(t, answer, `<span class="pill bad">dead</span> worker`)
	assert.Contains(t, answer, "(heartbeat 23 h ago)")
	assert.Contains(t, answer, "70 holdings")
	assert.Contains(t, answer, "What ends it: a reaper&#39;s pass would release it, but nothing releases here")
	assert.NotContains(t, answer, "next pass at", "a read-only page promises no pass")
	assert.NotRegexp(t, `\d+h\d+m\d+s`, body, "no Go durations")
	assert.NotContains(t, body, " 1 passes")

	_, body = f.get("/queue")
	assert.Equal(t, 1, strings.Count(body, "heartbeat 23 h ago"), "the dead worker's heartbeat is said once")
	assert.Contains(t, body, plural(v.Blocked, "task")+" blocked by")
	for _, q := range c.Tasks {
		assert.Contains(t, body, `id="task-`+q.Row.ID+`"`)
	}

	// One owner's cause, a page at a time (20 tasks a page here).
	code, body := f.get("/queue?" + string(c.Query()))
	require.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, plural(len(c.Tasks), "task")+".")
	assert.NotContains(t, body, "no lock holds up")
}

// TestQueuePreviewsEachCause: the whole queue shows the first tasks of each
// cause and links to the rest; the cause's own page lists every task, a
// page at a time.
func TestQueuePreviewsEachCause(t *testing.T) {
	spec := sim.SmallIncident()
	spec.QueuedTasks = 30
	f := newFixture(t, spec)
	f.srv.opts.PageSize = 5
	v := f.inspect()
	c := v.BlockingCauses()[0]
	require.Greater(t, len(c.Tasks), previewTasks)
	_, body := f.get("/queue")
	assert.Contains(t, body, `id="task-`+c.Tasks[previewTasks-1].Row.ID+`"`)
	assert.NotContains(t, body, `id="task-`+c.Tasks[previewTasks].Row.ID+`"`)
	assert.Contains(t, body, "All "+plural(len(c.Tasks), "task")+" of this cause")
	_, body = f.get("/queue?" + string(c.Query()) + "&page=2")
	assert.Contains(t, body, "Page 2 of")
	assert.Contains(t, body, `id="task-`+c.Tasks[5].Row.ID+`"`)
	assert.NotContains(t, body, `id="task-`+c.Tasks[4].Row.ID+`"`)
	assert.Contains(t, body, `<span class="tag">continued</span>`)
}

// TestUnknownTaskOrOwnerIs404: a task no row has, and an owner that holds
// nothing, answer 404 with a page that says so and where to look.
func TestUnknownTaskOrOwnerIs404(t *testing.T) {
	f := newFixture(t, sim.SmallIncident())
	f.inspect()
	missing := uuid.NewString()
	code, body := f.get("/tasks/" + missing)
	require.Equal(t, http.StatusNotFound, code)
	assert.Contains(t, body, `id="task-status"><strong>not-found</strong>: no task `+missing)
	assert.NotContains(t, body, "not-found</strong>: not found")
	assert.Contains(t, body, "No row of <code>core_task</code> has this id")

	misspelt := strings.Replace(f.inc.DeadOwner, "1@", "2@", 1)
	for _, p := range []string{"/holdings?" + qs("owner", misspelt), "/queue?" + qs("owner", misspelt)} {
		code, body = f.get(p)
		require.Equal(t, http.StatusNotFound, code, p)
		assert.Contains(t, body, "No such owner", p)
		assert.Contains(t, body, "Did you mean", p)
		assert.Contains(t, body, "?owner="+strings.ReplaceAll(f.inc.DeadOwner, "@", "%40"), p)
	}
	// A known owner that holds up no task is no error.
	code, _ = f.get("/queue?" + qs("owner", f.inc.LiveOwners[0], "blocked", "1"))
	require.Equal(t, http.StatusOK, code)
	code, _ = f.get("/holdings?" + qs("owner", f.inc.DeadOwner, "verdict", "healthy"))
	require.Equal(t, http.StatusOK, code)
}

// between is the part of s from the first from to the next to after it.
func between(s, from, to string) string {
	i := strings.Index(s, from)
	if i < 0 {
		return ""
	}
	s = s[i:]
	if j := strings.Index(s, to); j >= 0 {
		return s[:j]
	}
	return s
}
