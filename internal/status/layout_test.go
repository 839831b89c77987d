package status

import (
	"context"
	"github.com/lock-reaper/lock-reaper/internal/sim"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/reaper"
	"github.com/lock-reaper/lock-reaper/reaper/history"
)

// TestPlotHasAxes: the day chart has a count axis from 0 to a round top and
// a time axis from the window's start to now; one pass alone carries its
// count, and a pass that found nothing stale still marks its time.
func TestPlotHasAxes(t *testing.T) {
	now := time.Date(2026, 12, 7, 20, 30, 0, 0, time.UTC)
	p := plotOf([]history.Entry{{At: now.Add(-time.Hour), Mode: "once", Stale: 3, Released: 3}}, now)
	require.Len(t, p.Bars, 1)
	b := p.Bars[0]
	assert.Equal(t, "3", b.Value, "one pass reads as its number")
	assert.Equal(t, p.Base, b.Y+b.H, "the bar stands on the time axis")
	assert.Less(t, p.Top, b.Y, "3 stands below the axis's top of 5")
	labels := func(ts []tick) (out []string) {
		for _, t := range ts {
			out = append(out, t.Label)
		}
		return out
	}
	assert.Equal(t, []string{"0", "5"}, labels(p.Counts))
	times := labels(p.Times)
	assert.Equal(t, "20:30", times[0])
	assert.Equal(t, "now 20:30 UTC", times[len(times)-1])
	assert.Contains(t, times, "00:00")
	assert.Contains(t, p.Label, "1 pass in the last 24 h, at most 3 stale holdings in one")

	quiet := plotOf([]history.Entry{{At: now.Add(-time.Minute), Mode: "run"}}, now)
	require.Len(t, quiet.Bars, 1)
	assert.Equal(t, 2, quiet.Bars[0].H, "a pass that found nothing stale is a tick")
	assert.Equal(t, []string{"0", "1"}, labels(quiet.Counts))

	many := make([]history.Entry, 30)
	for i := range many {
		many[i] = history.Entry{At: now.Add(-time.Duration(i+1) * 10 * time.Minute), Stale: 40}
	}
	many[3].Stale = 45
	crowded := plotOf(many, now)
	assert.Equal(t, []string{"0", "25", "50"}, labels(crowded.Counts))
	var labelled []bar
	for _, b := range crowded.Bars {
		if b.Value != "" {
			for _, o := range labelled {
				assert.GreaterOrEqual(t, abs(o.VX-b.VX), valueGap, "labels never overlap")
			}
			labelled = append(labelled, b)
		}
	}
	assert.NotEmpty(t, labelled)
	assert.Less(t, len(labelled), len(crowded.Bars), "a crowded chart labels a few bars")
	assert.Equal(t, "45", crowded.Bars[len(crowded.Bars)-4].Value, "of labels that would overlap, the tallest's")

	beside := plotOf([]history.Entry{{At: now.Add(-time.Minute), Mode: "run"}, {At: now.Add(-time.Hour), Mode: "once", Stale: 7}}, now)
	assert.Equal(t, "7", beside.Bars[0].Value)
	assert.Empty(t, beside.Bars[1].Value, "a pass that found nothing stale is a tick without a number")
}

func TestRoundUp(t *testing.T) {
	for n, want := range map[int]int{0: 1, 1: 1, 2: 2, 3: 5, 6: 10, 11: 20, 70: 100, 1067: 2000} {
		assert.Equal(t, want, roundUp(n), n)
	}
}

// TestOverviewIsABoard: the overview's sections are cards of one grid, and
// the chart drawn on it has its axes.
func TestOverviewIsABoard(t *testing.T) {
	t.Parallel()
	f := newFixture(t, sim.SmallIncident())
	require.NoError(t, history.Record(context.Background(), f.rdb.Client, history.DefaultPrefix,
		history.Entry{At: time.Now().UTC().Add(-time.Hour), Mode: "once", Stale: 70, Released: 70}))
	f.inspect()
	_, body := f.get("/")
	require.Contains(t, body, `<div class="board">`)
	for _, id := range []string{"card-stuck", "card-stale", "card-owners", "card-guards", "card-kube", "card-passes", "card-doctor"} {
		assert.Contains(t, body, `id="`+id+`"`)
	}
	assert.Contains(t, body, `<g class="count-axis">`)
	assert.Contains(t, body, `<g class="time-axis">`)
	assert.Contains(t, body, ">now ")
	assert.Contains(t, body, `<code class="cmd" tabindex="0">lock-reaper release --owner `+f.inc.DeadOwner+` --dry-run</code>`)
}

// TestMassDeathHeadlineNamesTheCommands: under the mass-death guard the
// overview's headline and the blocked queue name what ends the hold, the
// release of the dead worker and a forced pass, and no page says "rerun":
// a page runs nothing.
func TestMassDeathHeadlineNamesTheCommands(t *testing.T) {
	t.Parallel()
	spec := sim.SmallIncident()
	spec.DeadHeartbeatAge = 2 * time.Minute // died within the guard's window
	f := newFixture(t, spec)
	cfg := passConfig()
	cfg.Policy.MaxDeadFraction, cfg.Policy.MinWorkers = 0.1, 1
	r, err := reaper.New(cfg, f.rdb.Client, f.db.Pool, nil)
	require.NoError(t, err)
	f.r, f.srv = r, New(r, Options{PageSize: 20})
	f.web.Config.Handler = f.srv

	check := func(when string) {
		_, body := f.get("/")
		assert.Contains(t, body, "<strong>mass-death</strong>", when)
		causes := between(body, `id="causes"`, "</ul></li>")
		assert.Contains(t, causes, "the mass-death guard holds back every release on dead grounds", when)
		assert.Contains(t, causes, `<code class="cmd" tabindex="0">lock-reaper release --owner `+f.inc.DeadOwner+` --dry-run</code>`, when)
		assert.Contains(t, causes, `<code class="cmd" tabindex="0">lock-reaper once --force</code>`, when)
		guards := between(body, `class="guards plain"`, "</ul></li></ul>")
		assert.Contains(t, guards, "lock-reaper once --force", when)
		for _, path := range []string{"/", "/queue", "/queue?blocked=1"} {
			_, body := f.get(path)
			assert.NotContains(t, strings.ToLower(body), "rerun", "%s: %s", when, path)
		}
	}
	v := f.inspect()
	require.NotEmpty(t, v.Guards())
	require.Equal(t, "mass-death", v.Guards()[0].Name)
	check("status")

	rep, err := r.RunOnce(context.Background(), reaper.Options{Mode: reaper.ModeOnce})
	require.NoError(t, err)
	require.Equal(t, "mass-death", rep.Guards[0].Name)
	f.srv.PassDone(nil, rep, time.Now().Add(time.Minute))
	f.srv.Wait()
	check("after a held pass")
}
