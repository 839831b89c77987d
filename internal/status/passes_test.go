package status

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/internal/sim"
	"github.com/lock-reaper/lock-reaper/reaper/history"
)

// TestPassesFromTheHistory: `lock-reaper status` shows the last passes of
// any reaper from the history in Redis, each time as <time datetime>, the
// chart of the day, and on a blocked task what ends the block: the last
// pass, or that none came for hours, and the command to run.
func TestPassesFromTheHistory(t *testing.T) {
	f := newFixture(t, sim.SmallIncident())
	ctx := context.Background()
	old := time.Now().UTC().Add(-3*time.Hour - time.Minute).Truncate(time.Second)
	require.NoError(t, history.Record(ctx, f.rdb.Client, history.DefaultPrefix,
		history.Entry{At: old, Mode: "once", Duration: 2 * time.Second, Stale: 1067, Released: 1067, Updated: 18}))

	v := f.inspect()
	require.Len(t, v.Passes, 1)
	require.True(t, v.Quiet())
	code, body := f.get("/passes")
	require.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, `<time datetime="`+old.Format(time.RFC3339)+`">`)
	assert.Contains(t, body, "No reaper has passed in 3 h 1 min.")
	assert.Contains(t, body, `<svg role="img"`)
	assert.Contains(t, body, `class="released"`)
	assert.Contains(t, body, "1,067")
	_, body = f.get("/queue?blocked=1")
	assert.Contains(t, body, "no reaper has passed in 3 h 1 min (the last, a once (CronJob) pass at "+clock(old)+" released 1,067 holdings")
	_, body = f.get("/tasks/" + v.Causes[0].Tasks[0].Row.ID)
	ro := between(body, `id="read-only-end"`, "</div>")
	assert.Contains(t, ro, "This page releases nothing")
	assert.Contains(t, ro, "lock-reaper release --owner "+f.inc.DeadOwner+" --dry-run")
	assert.NotContains(t, between(body, `id="task-status"`, "</p>"), "the next pass")

	recent := time.Now().UTC().Add(-2 * time.Minute).Truncate(time.Second)
	require.NoError(t, history.Record(ctx, f.rdb.Client, history.DefaultPrefix,
		history.Entry{At: recent, Mode: "run", Duration: time.Second, Stale: 70, Guards: []string{"mass-death"}}))
	v = f.inspect()
	require.False(t, v.Quiet())
	_, body = f.get("/")
	assert.Contains(t, between(body, `id="passes-answer"`, "</p>"), "Last pass: a pass of run (the daemon)")
	assert.Contains(t, body, "mass-death")
	assert.Less(t, strings.Index(body, clock(recent)), strings.Index(body, clock(old)), "newest first")
}

// failingPasses is the reaper with a history that cannot be read.
type failingPasses struct{ Source }

func (failingPasses) RecentPasses(context.Context, time.Time, int) (history.Passes, error) {
	return history.Passes{}, errors.New("NOPERM this user has no permissions to run the 'lrange' command")
}

// TestPassesUnreadable: a history that cannot be read is said on the page,
// and the page is served all the same.
func TestPassesUnreadable(t *testing.T) {
	f := newFixture(t, sim.SmallIncident())
	f.srv = New(failingPasses{f.r}, Options{})
	f.web.Config.Handler = f.srv
	v := f.inspect()
	require.Contains(t, v.PassesError, "NOPERM")
	for _, p := range []string{"/", "/passes"} {
		code, body := f.get(p)
		require.Equal(t, http.StatusOK, code, p)
		assert.Contains(t, body, "The history of passes could not be read: NOPERM", p)
	}
	_, body := f.get("/queue?blocked=1")
	assert.Contains(t, body, "last pass: the history of passes could not be read")
}
