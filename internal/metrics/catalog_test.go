package metrics

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/client_golang/prometheus/push"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/heartbeat"
	"github.com/lock-reaper/lock-reaper/internal/testing/passtest"
	"github.com/lock-reaper/lock-reaper/reaper"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
)

// TestFreshScrapeHasOnlyKnownLabelValues scrapes /metrics of fresh
// collectors over HTTP, as Prometheus does, and fails on any series whose
// label value is not a known name; every known series must be there, at 0.
func TestFreshScrapeHasOnlyKnownLabelValues(t *testing.T) {
	t.Parallel()
	_, reg := setup(t)
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	t.Cleanup(srv.Close)

	resp, err := http.Get(srv.URL)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	parser := expfmt.NewTextParser(model.UTF8Validation)
	parsed, err := parser.TextToMetricFamilies(resp.Body)
	require.NoError(t, err)
	var mfs []*dto.MetricFamily
	for _, mf := range parsed {
		mfs = append(mfs, mf)
	}
	requireCatalogSeries(t, mfs, true)
}

// TestFreshPushHasOnlyKnownLabelValues does the same with the body a
// one-shot pass pushes to a Pushgateway.
func TestFreshPushHasOnlyKnownLabelValues(t *testing.T) {
	t.Parallel()
	reg, err := NewPassRegistry(New("1.2.3"))
	require.NoError(t, err)

	var mu sync.Mutex
	var pushed []*dto.MetricFamily
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		dec := expfmt.NewDecoder(r.Body, expfmt.ResponseFormat(r.Header))
		for {
			mf := &dto.MetricFamily{}
			if err := dec.Decode(mf); err != nil {
				if err != io.EOF {
					http.Error(w, err.Error(), http.StatusBadRequest)
				}
				break
			}
			mu.Lock()
			pushed = append(pushed, mf)
			mu.Unlock()
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(srv.Close)
	require.NoError(t, push.New(srv.URL, "lock_reaper").Gatherer(reg).Add())

	mu.Lock()
	defer mu.Unlock()
	require.NotEmpty(t, pushed)
	requireCatalogSeries(t, pushed, true)
}

// TestObservedLabelValuesStayKnown: after passes with every kind of
// finding, the series still carry only known label values.
func TestObservedLabelValuesStayKnown(t *testing.T) {
	t.Parallel()
	m, reg := setup(t)
	rep := completedReport()
	rep.Guards = []reaper.Guard{{Name: "max-releases", Reason: "limit"}}
	m.Observe(rep)
	m.TicksSkipped(TickOverlap, 1)
	mfs, err := reg.Gather()
	require.NoError(t, err)
	requireCatalogSeries(t, mfs, false)
}

// requireCatalogSeries checks every lock_reaper_* family against Catalog:
// known name, known label names, known label values. With fresh, every
// family with known values must also have its series for every combination
// of them (the time of the last success excepted: absent until a pass; and
// the blocked tasks: absent until the status page's first view).
func requireCatalogSeries(t *testing.T, mfs []*dto.MetricFamily, fresh bool) {
	t.Helper()
	catalog := map[string]Family{}
	for _, f := range Catalog() {
		catalog[f.Name] = f
	}
	seen := map[string]map[string]bool{}
	for _, mf := range mfs {
		name := mf.GetName()
		if !strings.HasPrefix(name, namespace+"_") {
			continue
		}
		fam, ok := catalog[name]
		require.True(t, ok, "%s is not in the catalog", name)
		seen[name] = map[string]bool{}
		for _, metric := range mf.GetMetric() {
			var combo []string
			for _, lp := range metric.GetLabel() {
				values, ok := fam.Labels[lp.GetName()]
				require.True(t, ok, "%s has the unknown label %s", name, lp.GetName())
				v := lp.GetValue()
				require.True(t, isName(v), "%s{%s=%q} is not a name", name, lp.GetName(), v)
				if values != nil {
					require.Contains(t, values, v, "%s{%s=%q} is not a known value", name, lp.GetName(), v)
					combo = append(combo, lp.GetName()+"="+v)
				}
			}
			sort.Strings(combo)
			seen[name][strings.Join(combo, ",")] = true
		}
	}
	if !fresh {
		return
	}
	for _, fam := range Catalog() {
		if fam.Name == NameLastSuccess || fam.Name == NameDoctorCheckStatus || fam.Name == NameBlockedTasks || fam.Name == NameOldestBlockedWait {
			require.NotContains(t, seen, fam.Name, "absent until a pass completes, doctor has run or the status page built a view")
			continue
		}
		require.Contains(t, seen, fam.Name, "%s is missing from a fresh scrape", fam.Name)
		for _, combo := range combinations(fam.Labels) {
			require.True(t, seen[fam.Name][combo], "%s{%s} is not pre-created", fam.Name, combo)
		}
	}
}

// isName accepts what a label value of lock-reaper may look like: printable
// ASCII letters, digits and . _ - + (versions such as go1.26.0 included).
func isName(v string) bool {
	if v == "" {
		return false
	}
	for _, r := range v {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._-+", r)
		if !ok {
			return false
		}
	}
	return true
}

// combinations lists every "a=x,b=y" of the known values of labels (free
// labels left out), sorted by label name as requireCatalogSeries builds them.
func combinations(labels map[string][]string) []string {
	var names []string
	for n, vs := range labels {
		if vs != nil {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	combos := []string{""}
	for _, n := range names {
		var next []string
		for _, c := range combos {
			for _, v := range labels[n] {
				p := n + "=" + v
				if c != "" {
					p = c + "," + p
				}
				next = append(next, p)
			}
		}
		combos = next
	}
	return combos
}

// TestCatalogInDocs: docs/metrics.md names every metric and
// every label, so dashboards and alerts can be written from it.
func TestCatalogInDocs(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("../../docs/metrics.md")
	require.NoError(t, err)
	doc := string(data)
	for _, fam := range Catalog() {
		require.True(t, strings.Contains(doc, "`"+fam.Name+"`"), "docs/metrics.md does not document %s", fam.Name)
		for label, values := range fam.Labels {
			require.True(t, strings.Contains(doc, "`"+label+"`"), "docs/metrics.md does not document %s's label %s", fam.Name, label)
			for _, v := range values {
				require.True(t, strings.Contains(doc, "`"+v+"`"), "docs/metrics.md does not document %s{%s=%q}", fam.Name, label, v)
			}
		}
	}
}

// TestFleetGauges: holdings and owners by liveness, lost tasks by verdict
// and the age of the oldest stale holding describe the last completed pass.
func TestFleetGauges(t *testing.T) {
	t.Parallel()
	m, _ := setup(t)
	rep := completedReport()
	rep.DBNow = started
	firstSeen := started.Add(-90 * time.Second)
	rep.Findings[2].Action = judge.ActionSuspect
	rep.Findings[2].FirstSeen = &firstSeen
	rep.LockOwners = []reaper.OwnerReport{
		{Name: "1@worker-7", Liveness: heartbeat.Dead.String(), Holdings: 2},
		{Name: "2@worker-8", Liveness: heartbeat.Alive.String(), Holdings: 1},
		{Name: "3@worker-9", Liveness: heartbeat.Alive.String(), Holdings: 4},
	}
	rep.Tasks = append(rep.Tasks, reaper.TaskFinding{TaskJudgement: &judge.TaskJudgement{ID: "x", Verdict: judge.VerdictStuckClaim}, Result: reaper.ResultSuspected},
		reaper.TaskFinding{TaskJudgement: &judge.TaskJudgement{ID: "y", Verdict: judge.VerdictClaimedNotStarted, Action: judge.ActionReport}, Result: reaper.ResultReported})
	m.Observe(rep)

	g := testutil.ToFloat64
	require.Equal(t, 5.0, g(m.holdings.WithLabelValues("alive")))
	require.Equal(t, 2.0, g(m.holdings.WithLabelValues("dead")))
	require.Equal(t, 0.0, g(m.holdings.WithLabelValues("gone")))
	require.Equal(t, 2.0, g(m.owners.WithLabelValues("alive")))
	require.Equal(t, 1.0, g(m.owners.WithLabelValues("dead")))
	require.Equal(t, 1.0, g(m.lostTasks.WithLabelValues("lost")))
	require.Equal(t, 1.0, g(m.lostTasks.WithLabelValues("stuck-claim")))
	require.Equal(t, 0.0, g(m.lostTasks.WithLabelValues("orphaned-claim")))
	require.Equal(t, 1.0, g(m.lostTasks.WithLabelValues("claimed-not-started")), "reported only, counted all the same")
	require.Equal(t, 90.0, g(m.oldestStale), "the suspect first seen 90s ago")

	// A dead owner's heartbeat age and a finished task's age count too,
	// released or deferred alike.
	hb, fin := judge.Duration(5*time.Minute), judge.Duration(2*time.Hour)
	e := rep.Findings[0].Evidence()
	e.HeartbeatAge = &hb
	rep.Findings[0].Action = judge.ActionRelease
	rep.Findings[0].SetEvidence(e)
	m.Observe(rep)
	require.Equal(t, 300.0, g(m.oldestStale))
	rep.Findings = append(rep.Findings, reaper.Finding{Judgement: new(passtest.WithEvidence(judge.Judgement{Holding: judge.Holding{Key: "task:x", Kind: judge.KindTask}, Verdict: judge.VerdictTaskFinished, Action: judge.ActionRelease}, judge.Evidence{FinishedAge: &fin})), Result: reaper.ResultDeferred})
	m.Observe(rep)
	require.Equal(t, 7200.0, g(m.oldestStale))
	// Healthy and pending holdings are not stale, however old.
	rep.Findings = []reaper.Finding{{Judgement: new(passtest.WithEvidence(judge.Judgement{Holding: judge.Holding{Key: "task:y", Kind: judge.KindTask}, Verdict: judge.VerdictPending, Action: judge.ActionKeep}, judge.Evidence{HeartbeatAge: &fin}))}}
	m.Observe(rep)
	require.Equal(t, 0.0, g(m.oldestStale))

	// The next pass finds the fleet healthy: every gauge drops back.
	next := &reaper.Report{Mode: reaper.ModeOnce, StartedAt: started.Add(time.Minute), DBNow: started.Add(time.Minute),
		LockOwners: []reaper.OwnerReport{{Name: "3@worker-9", Liveness: "alive", Holdings: 1}}}
	m.Observe(next)
	require.Equal(t, 1.0, g(m.holdings.WithLabelValues("alive")))
	require.Equal(t, 0.0, g(m.holdings.WithLabelValues("dead")))
	require.Equal(t, 0.0, g(m.owners.WithLabelValues("dead")))
	require.Equal(t, 0.0, g(m.lostTasks.WithLabelValues("lost")))
	require.Equal(t, 0.0, g(m.lostTasks.WithLabelValues("claimed-not-started")))
	require.Equal(t, 0.0, g(m.oldestStale))
}

// TestUncommittedWriteGauges: the memberships the uncommitted-task-write
// guard left and the age of the session behind it describe the last
// completed pass; a pass without the guard sets them back to 0.
func TestUncommittedWriteGauges(t *testing.T) {
	t.Parallel()
	m, _ := setup(t)
	rep := completedReport()
	rep.Guards = append(rep.Guards, reaper.Guard{Name: judge.GuardUncommittedTaskWrite, Reason: "r",
		UncommittedWrite: &reaper.UncommittedWrite{PID: 4242, TransactionAge: reaper.Seconds(75 * time.Second), AgeFrom: reaper.AgeFromActivity, Sessions: 1, Held: 3}})
	m.Observe(rep)
	g := testutil.ToFloat64
	require.Equal(t, 3.0, g(m.openWrite.held))
	require.Equal(t, 75.0, g(m.openWrite.age))
	require.Equal(t, 1.0, g(m.guardTrips.WithLabelValues(judge.GuardUncommittedTaskWrite)))

	m.Observe(completedReport())
	require.Equal(t, 0.0, g(m.openWrite.held))
	require.Equal(t, 0.0, g(m.openWrite.age))
}

// TestBlockedGauges: the blocked tasks and the oldest blocked wait are
// absent until the status page's first view sets them, then say its
// numbers, 0 included.
func TestBlockedGauges(t *testing.T) {
	t.Parallel()
	m, reg := setup(t)
	gauges := func() map[string]float64 {
		mfs, err := reg.Gather()
		require.NoError(t, err)
		out := map[string]float64{}
		for _, mf := range mfs {
			if n := mf.GetName(); n == NameBlockedTasks || n == NameOldestBlockedWait {
				out[n] = mf.GetMetric()[0].GetGauge().GetValue()
			}
		}
		return out
	}
	m.Observe(completedReport())
	require.Empty(t, gauges(), "a pass alone reads no waiting task")
	m.SetBlocked(83, 47*time.Minute)
	require.Equal(t, map[string]float64{NameBlockedTasks: 83, NameOldestBlockedWait: 2820}, gauges())
	m.SetBlocked(0, 0)
	require.Equal(t, map[string]float64{NameBlockedTasks: 0, NameOldestBlockedWait: 0}, gauges())
}
