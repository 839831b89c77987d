package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/lock-reaper/lock-reaper/reaper"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
)

// Names of the metrics of doctor's checks and of unprotected tasks.
const (
	NameUnprotectedTasks  = "lock_reaper_unprotected_tasks"
	NameDoctorCheckStatus = "lock_reaper_doctor_check_status"
)

// unprotectedVerdict is the task verdict of a running task of a live claim
// whose task lock is absent from Redis (docs/verdicts.md).
const unprotectedVerdict = judge.VerdictUnprotected

// doctorMetrics are the series that describe the deployment rather than
// the work of a pass: running tasks the locks no longer protect, and the
// status of each doctor check.
type doctorMetrics struct {
	unprotected prometheus.Gauge
	checkStatus *prometheus.GaugeVec
}

func newDoctorMetrics() *doctorMetrics {
	return &doctorMetrics{
		unprotected: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: namespace, Name: "unprotected_tasks",
			Help: "Running tasks of a live claim whose task lock is absent from Redis (verdict unprotected), seen by the last completed full scan: their resources are unguarded. The reaper writes no lock for them.",
		}),
		// No series before doctor has run: a 0 would claim a check passed.
		checkStatus: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: namespace, Name: "doctor_check_status",
			Help: "Status of each lock-reaper doctor check at the daemon's start: 0 ok, 1 warn, 2 fail.",
		}, []string{"check"}),
	}
}

func (d *doctorMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{d.unprotected, d.checkStatus}
}

// observe counts the unprotected tasks of a completed pass. Only a full
// scan can tell a lock is absent, so a registry-only pass leaves the gauge
// as the last full scan set it.
func (d *doctorMetrics) observe(rep *reaper.Report) {
	if !rep.Scanned.FullScan {
		return
	}
	n := 0
	for _, t := range rep.Tasks {
		if t.Verdict == unprotectedVerdict {
			n++
		}
	}
	d.unprotected.Set(float64(n))
}

// DoctorCheck records a doctor check's status level (0 ok, 1 warn, 2 fail).
func (m *Metrics) DoctorCheck(check string, level int) {
	m.doctor.checkStatus.WithLabelValues(check).Set(float64(level))
}
