package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lock-reaper/lock-reaper/reaper"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
)

// Names of the metrics of the hold another session's uncommitted write to
// core_task puts on shared memberships (the guard uncommitted-task-write).
const (
	NameUncommittedWriteHeld = "lock_reaper_uncommitted_write_held"
	NameUncommittedWriteAge  = "lock_reaper_uncommitted_write_age_seconds"
)

// openWriteMetrics say how many shared memberships the last completed pass
// left for another session's uncommitted write, and how long that session's
// transaction had been open: an idle-in-transaction session shows as an age
// that grows pass after pass up to confirm_after.
type openWriteMetrics struct {
	held prometheus.Gauge
	age  prometheus.Gauge
}

func newOpenWriteMetrics() *openWriteMetrics {
	return &openWriteMetrics{
		held: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: namespace, Name: "uncommitted_write_held",
			Help: "Shared memberships of owners that may be dispatching which the last completed pass left for the next because another session held an uncommitted write to core_task (guard uncommitted-task-write).",
		}),
		age: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: namespace, Name: "uncommitted_write_age_seconds",
			Help: "How long the transaction of the session whose uncommitted write to core_task held shared memberships in the last completed pass had been open (pg_stat_activity), or at least been seen open (pg_locks, without pg_read_all_stats); 0 when none held.",
		}),
	}
}

func (o *openWriteMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{o.held, o.age}
}

// observe sets the gauges from a completed pass's guard.
func (o *openWriteMetrics) observe(rep *reaper.Report) {
	held, age := 0, time.Duration(0)
	for _, g := range rep.Guards {
		if g.Name == judge.GuardUncommittedTaskWrite && g.UncommittedWrite != nil {
			held, age = g.UncommittedWrite.Held, time.Duration(g.UncommittedWrite.TransactionAge)
		}
	}
	o.held.Set(float64(held))
	o.age.Set(age.Seconds())
}
