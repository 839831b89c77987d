package status

import (
	"context"
	"github.com/lock-reaper/lock-reaper/internal/sim"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/internal/daemon"
	"github.com/lock-reaper/lock-reaper/internal/explain"
	"github.com/lock-reaper/lock-reaper/internal/metrics"
	"github.com/lock-reaper/lock-reaper/reaper"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
)

// queued is a waiting task of a test queue: its status, how long it has
// waited and the actions of the holdings in its way, released or not.
func queued(status explain.Status, wait time.Duration, links ...Link) Queued {
	return Queued{Wait: wait, Explanation: explain.Explanation{Status: status}, Chain: links}
}

func linkOf(action judge.Action, released bool) Link {
	return Link{Holder: explain.Holder{HoldingVerdict: reaper.HoldingVerdict{Action: action}}, Released: released}
}

// TestBlockedOf: a task counts when a stale or suspect lock not released
// yet stands in its way; the oldest is the longest wait, the first in fetch
// order among equals, and its wait is 0 when none is blocked.
func TestBlockedOf(t *testing.T) {
	t.Parallel()
	none := blockedOf(nil)
	require.Zero(t, none.Count)
	require.Nil(t, none.Oldest)
	require.Zero(t, none.OldestWait())

	release, suspect, keep := judge.ActionRelease, judge.ActionSuspect, judge.ActionKeep
	queue := []Queued{
		queued(explain.StatusReady, 10*time.Hour),                             // ready: nothing in its way
		queued(explain.StatusWaiting, 9*time.Hour, linkOf(keep, false)),       // a live worker's lock
		queued(explain.StatusBlocked, 8*time.Hour, linkOf(release, true)),     // the pass released it
		queued(explain.StatusBlocked, 7*time.Hour, linkOf(keep, false)),       // only healthy links left
		queued(explain.StatusBlocked, 5*time.Minute, linkOf(release, false)),  // stale
		queued(explain.StatusBlocked, 40*time.Minute, linkOf(suspect, false)), // suspect
		queued(explain.StatusBlocked, 40*time.Minute, linkOf(keep, false), linkOf(release, false)),
		queued(explain.StatusBlocked, time.Minute, linkOf(release, true), linkOf(suspect, false)),
	}
	b := blockedOf(queue)
	require.Equal(t, 4, b.Count)
	require.Same(t, &queue[5], b.Oldest, "the longest wait, the first in fetch order among equals")
	require.Equal(t, 40*time.Minute, b.OldestWait())

	// The page's headline and its oldest blocked wait are these numbers.
	v := &View{Queue: queue}
	require.Equal(t, b, v.BlockedTasks())
	require.Same(t, b.Oldest, oldestBlocked(v))
}

// blockedObserver records what ObserveBlocked tells.
type blockedObserver struct {
	mu         sync.Mutex
	calls      int
	tasks      int
	oldestWait time.Duration
}

func (o *blockedObserver) observe(tasks int, oldestWait time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.calls++
	o.tasks, o.oldestWait = tasks, oldestWait
}

func (o *blockedObserver) last() (calls, tasks int, oldestWait time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.calls, o.tasks, o.oldestWait
}

// TestInspectionTellsBlocked: each view of an inspection (`lock-reaper
// status`) tells the observer the numbers its overview shows first.
func TestInspectionTellsBlocked(t *testing.T) {
	f := newFixture(t, sim.SmallIncident())
	var o blockedObserver
	f.srv.ObserveBlocked(o.observe)
	v := f.inspect()
	calls, tasks, wait := o.last()
	require.Equal(t, 1, calls)
	require.Positive(t, v.Blocked, "the dead worker's locks block part of the queue")
	require.Equal(t, v.Blocked, tasks)
	require.Equal(t, oldestBlocked(v).Wait, wait)
	require.Positive(t, wait)
	_, body := f.get("/")
	require.Contains(t, body, `<dd id="blocked-count"><a href="/queue?blocked=1">`+strconv.Itoa(tasks)+`</a></dd>`)
}

// auditRunner runs the daemon's passes as dry runs: they release nothing,
// so the page's view after each still finds the queue blocked.
type auditRunner struct{ r *reaper.Reaper }

func (a auditRunner) RunOnce(ctx context.Context, opts reaper.Options) (*reaper.Report, error) {
	opts.Mode = reaper.ModeAudit
	return a.r.RunOnce(ctx, opts)
}

// TestDaemonExportsBlocked: the daemon's /metrics carries the blocked tasks
// and the oldest blocked wait of the page's view of its pass: the numbers
// its overview shows.
func TestDaemonExportsBlocked(t *testing.T) {
	f := newFixture(t, sim.SmallIncident())
	pages := New(f.r, Options{})
	d, err := daemon.New(auditRunner{f.r}, daemon.Config{Listen: "127.0.0.1:0", Schedule: "@every 1h", Pages: pages})
	require.NoError(t, err)
	require.NoError(t, d.Start(context.Background()))
	t.Cleanup(func() { d.Stop(); pages.Wait() })
	require.Eventually(t, func() bool { return pages.View() != nil }, 30*time.Second, 20*time.Millisecond)
	pages.Wait()
	v := pages.View()
	require.Positive(t, v.Blocked, "a dry run released nothing")

	got := scrape(t, "http://"+d.Addr().String()+"/metrics")
	require.Equal(t, float64(v.Blocked), got[metrics.NameBlockedTasks])
	require.Equal(t, oldestBlocked(v).Wait.Seconds(), got[metrics.NameOldestBlockedWait])
}

// scrape reads the lock_reaper_ gauges without labels of a /metrics page.
func scrape(t *testing.T, url string) map[string]float64 {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	parser := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := parser.TextToMetricFamilies(strings.NewReader(string(raw)))
	require.NoError(t, err)
	out := map[string]float64{}
	for name, mf := range mfs {
		if ms := mf.GetMetric(); len(ms) == 1 && ms[0].GetGauge() != nil && len(ms[0].GetLabel()) == 0 {
			out[name] = ms[0].GetGauge().GetValue()
		}
	}
	return out
}
