package metrics

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Names of the metrics of the waiting tasks blocked by stale or suspect
// locks: what the status page says first.
const (
	NameBlockedTasks      = "lock_reaper_blocked_tasks"
	NameOldestBlockedWait = "lock_reaper_oldest_blocked_wait_seconds"
)

// blockedMetrics say how many waiting tasks the status page's view of the
// last completed pass found blocked by a stale or suspect lock, and how long
// the oldest of them had waited. A pass does not read the waiting tasks; the
// page's view of it does (`run` builds one after every pass, `once` one for
// its push), and its numbers are set here (SetBlocked).
//
// Both are absent until first set, like the time of the last success: a 0
// before any view, or from a process that built none (`run` without the
// status page, a `once` whose pass failed), would say "nothing blocked" when
// nothing was looked at, and a push with add semantics would overwrite the
// numbers an earlier pass pushed.
type blockedMetrics struct {
	tasks, wait *prometheus.Desc

	mu         sync.Mutex
	set        bool
	count      int
	oldestWait time.Duration
}

func newBlockedMetrics() *blockedMetrics {
	return &blockedMetrics{
		tasks: prometheus.NewDesc(NameBlockedTasks,
			"Waiting tasks that a stale or suspect lock no pass has released yet blocks, among the first 2000 in Pulp's fetch order (the status page's bound), as the status page's view of the last completed pass found them (run with the status page, once). Absent until the first view.",
			nil, nil),
		wait: prometheus.NewDesc(NameOldestBlockedWait,
			"How long the blocked waiting task that has waited longest had waited (since it was created, on the database clock) as the status page's view of the last completed pass found it; 0 when none is blocked. Absent when lock_reaper_blocked_tasks is.",
			nil, nil),
	}
}

// SetBlocked sets the blocked tasks and the oldest blocked wait of the
// status page's latest view (status.Server.ObserveBlocked).
func (m *Metrics) SetBlocked(tasks int, oldestWait time.Duration) {
	b := m.blocked
	b.mu.Lock()
	defer b.mu.Unlock()
	b.set, b.count, b.oldestWait = true, tasks, oldestWait
}

// Describe implements prometheus.Collector.
func (b *blockedMetrics) Describe(ch chan<- *prometheus.Desc) {
	ch <- b.tasks
	ch <- b.wait
}

// Collect implements prometheus.Collector.
func (b *blockedMetrics) Collect(ch chan<- prometheus.Metric) {
	b.mu.Lock()
	set, count, wait := b.set, b.count, b.oldestWait
	b.mu.Unlock()
	if !set {
		return
	}
	ch <- prometheus.MustNewConstMetric(b.tasks, prometheus.GaugeValue, float64(count))
	ch <- prometheus.MustNewConstMetric(b.wait, prometheus.GaugeValue, wait.Seconds())
}
