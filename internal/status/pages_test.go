package status

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/internal/explain"
	"github.com/lock-reaper/lock-reaper/internal/sim"
	"github.com/lock-reaper/lock-reaper/internal/testing/webtest"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
)

// TestPagesShowTheIncident checks every page against the incident's
// manifest: the blocked tasks, the chain to the dead owner, its holdings.
func TestPagesShowTheIncident(t *testing.T) {
	f := newFixture(t, sim.SmallIncident())
	code, body := f.get("/")
	require.Equal(t, http.StatusServiceUnavailable, code, "no snapshot yet")
	require.Contains(t, body, "No snapshot has been read yet")

	v := f.inspect()
	// Every other queued task needs a dead repository, the domain-exclusive
	// one the dead worker's shared membership too.
	require.Equal(t, len(f.inc.Queued), v.QueueTotal)
	require.GreaterOrEqual(t, v.Blocked, 6)
	for _, q := range v.Queue {
		if !q.Blocked() {
			continue
		}
		require.NotEmpty(t, q.Chain, q.Row.ID)
		dead := false
		for _, l := range q.Chain {
			if l.Holder.Owner == f.inc.DeadOwner {
				dead = true
				require.Equal(t, "dead", l.Holder.Liveness.String())
				require.NotContains(t, l.Freed, "next pass", "`status` runs no pass: it promises none")
				require.Contains(t, l.Freed, "last pass: no reaper has recorded a pass in the last 24 h")
				require.Equal(t, []Command{{Line: "lock-reaper release --owner " + f.inc.DeadOwner + " --dry-run", Then: "then again without --dry-run"}}, l.Commands,
					"the command that ends it is a code block of its own")
			}
		}
		require.True(t, dead, "task %s is blocked by the dead owner", q.Row.ID)
	}

	code, body = f.get("/")
	require.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, "<strong>Yes:</strong>")
	assert.Contains(t, body, "Snapshot ")
	assert.Contains(t, body, "No pass recorded")

	code, body = f.get("/queue?blocked=1")
	require.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, "blocked")
	assert.NotContains(t, body, "next pass at")
	assert.Contains(t, body, "lock-reaper release --owner "+f.inc.DeadOwner+" --dry-run")
	assert.Contains(t, body, url.QueryEscape(f.inc.DeadOwner))
	// In fetch order: the first queued task comes before the last one.
	first, last := f.inc.Queued[0], f.inc.Queued[len(f.inc.Queued)-1]
	_, all := f.get("/queue")
	require.Less(t, strings.Index(all, first), strings.Index(all, last))

	code, body = f.get("/holdings?" + qs("owner", f.inc.DeadOwner))
	require.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, "owner-dead")
	assert.Contains(t, body, "of 4 ", "70 holdings of the dead owner, 20 a page")
	assert.NotContains(t, body, f.inc.LiveOwners[0])
	code, body = f.get("/holdings?" + qs("owner", f.inc.DeadOwner, "page", "4"))
	require.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, "Page 4 of 4")
	_, body = f.get("/holdings?" + qs("verdict", "healthy"))
	assert.Contains(t, body, f.inc.LiveOwners[0])
	assert.NotContains(t, body, "owner-dead</a>")

	_, body = f.get("/owners?liveness=dead")
	assert.Contains(t, body, f.inc.DeadOwner)
	assert.NotContains(t, body, f.inc.LiveOwners[0])

	// The task page: the same conclusion as explain, in every form of ref.
	blocked := ""
	for _, q := range v.Queue {
		if q.Blocked() {
			blocked = q.Row.ID
			break
		}
	}
	want := explain.Explain(v.In, blocked) // without the rows explain reads
	require.NotEmpty(t, want.TaskID)
	for _, ref := range []string{"/tasks/" + blocked, "/tasks/pulp/api/v3/tasks/" + blocked + "/",
		"/tasks?" + qs("task", "prn:core.task:"+blocked), "/tasks?" + qs("task", "https://pulp.example/pulp/api/v3/tasks/"+blocked+"/")} {
		code, body = f.get(ref)
		require.Equal(t, http.StatusOK, code, ref)
		assert.Contains(t, body, "<strong>blocked</strong>", ref)
		assert.Contains(t, body, "blocked by a stale lock of dead worker", ref)
	}
	code, body = f.get("/tasks/not-a-task")
	require.Equal(t, http.StatusBadRequest, code)
	assert.Contains(t, body, "is not a task UUID")
	code, _ = f.get("/nowhere")
	require.Equal(t, http.StatusNotFound, code)
}

// TestOnlyGetAndHead refuses every other method on every path, known or
// not, with 405, and writes nothing.
func TestOnlyGetAndHead(t *testing.T) {
	f := newFixture(t, sim.SmallIncident())
	v := f.inspect()
	paths := []string{"/", "/queue", "/owners", "/holdings", "/tasks/" + f.inc.Queued[0], "/static/style.css", "/nowhere"}
	for _, p := range paths {
		for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions, "TRACE", "CONNECT", "PROPFIND"} {
			code, _ := webtest.Do(t, m, f.web.URL+p)
			assert.Equal(t, http.StatusMethodNotAllowed, code, "%s %s", m, p)
		}
		code, body := webtest.Do(t, http.MethodHead, f.web.URL+p)
		assert.Contains(t, []int{http.StatusOK, http.StatusNotFound}, code, "HEAD %s", p)
		assert.Empty(t, body)
	}
	// Nothing changed: the same holdings are there.
	require.Len(t, f.inspect().Holdings(), len(v.Holdings()))
}

// TestSecurityHeaders are on every answer, the refusals included.
func TestSecurityHeaders(t *testing.T) {
	f := newFixture(t, sim.SmallIncident())
	f.inspect()
	for _, m := range []string{http.MethodGet, http.MethodPost} {
		for _, p := range []string{"/", "/queue", "/static/refresh.js", "/nowhere"} {
			req, err := http.NewRequest(m, f.web.URL+p, nil)
			require.NoError(t, err)
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			resp.Body.Close()
			csp := resp.Header.Get("Content-Security-Policy")
			assert.Contains(t, csp, "script-src 'self'", p)
			assert.NotContains(t, csp, "unsafe-inline", p)
			assert.Contains(t, csp, "frame-ancestors 'none'", p)
			assert.Equal(t, "DENY", resp.Header.Get("X-Frame-Options"), p)
			assert.Equal(t, "nosniff", resp.Header.Get("X-Content-Type-Options"), p)
		}
	}
	_, body := f.get("/")
	assert.NotContains(t, body, "<script>", "no inline script")
	assert.NotContains(t, body, " style=", "no inline style")
}

// TestHostileValuesAreEscaped: keys, owners and task names holding markup
// and control characters come out as text.
func TestHostileValuesAreEscaped(t *testing.T) {
	f := newFixture(t, sim.SmallIncident())
	ctx := context.Background()
	resource := "<script>alert(1)</script>\x1b[2J\u202e"
	// The reaper ignores (and reports) an owner with control characters,
	// so the one holding the lock has markup only; the ignored one is shown
	// on the overview.
	owner := "<img src=x onerror=alert(2)>@host"
	ignoredOwner := "<i>x</i>\x07@host"
	name := "<b>bold</b>\x1b]0;title\x07"
	ids, err := sim.InsertTasks(ctx, f.db.Pool, sim.TaskSpec{Name: name, Exclusive: []string{resource}}, sim.TaskSpec{Name: name, Exclusive: []string{resource}})
	require.NoError(t, err)
	_, err = sim.Acquire(ctx, f.rdb.Client, ids[0], owner, []string{resource}, nil)
	require.NoError(t, err)
	require.NoError(t, f.rdb.Client.Set(ctx, judge.ResourceKeyPrefix+resource+"2", ignoredOwner, 0).Err())
	v := f.inspect()
	found := false
	for _, q := range v.Queue {
		if q.Row.ID == ids[1] {
			found = true
			require.NotEmpty(t, q.Chain)
			require.Equal(t, owner, q.Chain[0].Holder.Owner)
		}
	}
	require.True(t, found)
	for _, p := range []string{"/", "/queue", "/owners", "/holdings", "/holdings?" + qs("owner", owner), "/holdings?" + qs("resource", resource), "/tasks/" + ids[1], "/tasks/" + ids[0]} {
		code, body := f.get(p)
		require.Equal(t, http.StatusOK, code, p)
		for _, raw := range []string{"<script>alert", "<img src=x", "<b>bold", "<i>x", "\x1b", "\x07", "\u202e"} {
			assert.NotContains(t, body, raw, p)
		}
	}
	_, body := f.get("/holdings?" + qs("owner", owner))
	assert.Contains(t, body, "&lt;img src=x onerror=alert(2)&gt;@host", "the owner is shown as text")
	assert.Contains(t, body, "&#34;pulp:resource_lock:&lt;script&gt;alert(1)&lt;/script&gt;\\x1b[2J\\u202e&#34;", "the key is shown quoted")
	// The filter form shows such a value quoted, and takes it back quoted.
	_, body = f.get("/holdings?" + qs("resource", strconv.Quote(resource)))
	assert.Contains(t, body, "<p class=\"pager\">1 holding.</p>")
	_, body = f.get("/")
	assert.Contains(t, body, "&#34;&lt;i&gt;x&lt;/i&gt;\\a@host&#34;", "the ignored owner is shown quoted")
}

// TestNoSecretOnAnyPage: a password in the database URL is never shown.
func TestNoSecretOnAnyPage(t *testing.T) {
	f := newFixture(t, sim.SmallIncident())
	f.inspect()
	for _, p := range []string{"/", "/queue", "/owners", "/holdings", "/tasks/" + f.inc.Queued[0]} {
		_, body := f.get(p)
		for _, secret := range []string{f.db.URL, f.rdb.URL, "postgres://", "redis://", "password"} {
			assert.NotContains(t, body, secret, p)
		}
	}
}

func qs(kv ...string) string { return string(query(kv...)) }

func TestDebugHostile(t *testing.T) {
	f := newFixture(t, sim.SmallIncident())
	ctx := context.Background()
	resource := "<script>alert(1)</script>\x1b[2J\u202e"
	owner := "<img src=x onerror=alert(2)>\x07@host"
	ids, err := sim.InsertTasks(ctx, f.db.Pool, sim.TaskSpec{Name: "x", Exclusive: []string{resource}}, sim.TaskSpec{Name: "y", Exclusive: []string{resource}})
	require.NoError(t, err)
	b, err := sim.Acquire(ctx, f.rdb.Client, ids[0], owner, []string{resource}, nil)
	t.Log(b, err)
	v := f.inspect()
	for _, jd := range v.Holdings() {
		if jd.Owner == owner {
			t.Logf("%q %s %s", jd.Key, jd.Verdict, jd.Action)
		}
	}
	for _, q := range v.Queue {
		if q.Row.ID == ids[1] || q.Row.ID == ids[0] {
			t.Logf("%+v", q.Explanation)
		}
	}
	t.Log(v.In.Ignored)
}
