package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lock-reaper/lock-reaper/heartbeat"
	"github.com/lock-reaper/lock-reaper/reaper"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
)

// fleet holds the gauges that describe the lock owners and the stale work
// the last completed pass saw: what a dashboard of the fleet's health shows
// beside the counters of what the reaper did.
type fleet struct {
	holdings    *prometheus.GaugeVec
	owners      *prometheus.GaugeVec
	lostTasks   *prometheus.GaugeVec
	oldestStale prometheus.Gauge
}

// livenesses are the values of the liveness label, healthiest first.
var livenesses = []heartbeat.Liveness{heartbeat.Alive, heartbeat.Late, heartbeat.Dead, heartbeat.Gone}

func newFleet() fleet {
	return fleet{
		holdings: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: namespace, Name: "holdings",
			Help: "Holdings (task locks and resource holdings) the last completed pass read, by their owner's liveness: alive, late, dead or gone.",
		}, []string{"liveness"}),
		owners: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: namespace, Name: "owners",
			Help: "Lock owners holding at least one lock in the last completed pass, by liveness: alive, late, dead or gone.",
		}, []string{"liveness"}),
		lostTasks: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: namespace, Name: "lost_tasks",
			Help: "Tasks the last completed pass found lost, orphaned or stuck, by verdict, whatever became of them; claimed-not-started ones are only reported.",
		}, []string{"verdict"}),
		oldestStale: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: namespace, Name: "oldest_stale_holding_age_seconds",
			Help: "How long the oldest holding the last completed pass found stale (to be released or confirmed) has been stale, on the database clock: since its first sighting (suspects), its task's end (task-finished) or its owner's last heartbeat (owner-dead, task-lost); 0 when none is.",
		}),
	}
}

func (f *fleet) initSeries() {
	for _, l := range livenesses {
		f.holdings.WithLabelValues(l.String())
		f.owners.WithLabelValues(l.String())
	}
	for _, v := range lostTaskVerdicts {
		f.lostTasks.WithLabelValues(v.String())
	}
}

// observe sets the fleet gauges from a completed pass that read the locks.
func (f *fleet) observe(rep *reaper.Report) {
	holdings := map[string]int{}
	owners := map[string]int{}
	for _, o := range rep.LockOwners {
		holdings[o.Liveness] += o.Holdings
		owners[o.Liveness]++
	}
	// Every known value is set, so a liveness that had owners last pass and
	// none now drops to 0 instead of keeping its old value.
	for _, l := range livenesses {
		f.holdings.WithLabelValues(l.String()).Set(float64(holdings[l.String()]))
		f.owners.WithLabelValues(l.String()).Set(float64(owners[l.String()]))
		delete(holdings, l.String())
		delete(owners, l.String())
	}
	for l, n := range holdings {
		f.holdings.WithLabelValues(l).Set(float64(n))
	}
	for l, n := range owners {
		f.owners.WithLabelValues(l).Set(float64(n))
	}

	lost := map[judge.Verdict]int{}
	for _, t := range rep.Tasks {
		lost[t.Verdict]++
	}
	for _, v := range lostTaskVerdicts {
		f.lostTasks.WithLabelValues(v.String()).Set(float64(lost[v]))
		delete(lost, v)
	}
	for v, n := range lost {
		f.lostTasks.WithLabelValues(v.String()).Set(float64(n))
	}

	f.oldestStale.Set(oldestStaleAge(rep).Seconds())
}

// oldestStaleAge is how long the oldest stale holding of the report has
// been stale, as far as the pass can tell: since its first sighting for a
// suspect (remembered across passes), since its task finished for
// task-finished, since its owner's last heartbeat for owner-dead and
// task-lost. A holding with none of these (owner-gone, first seen now)
// counts 0. Deferred holdings count: a guard holding releases back is when
// their age matters most.
func oldestStaleAge(rep *reaper.Report) time.Duration {
	var oldest time.Duration
	for _, f := range rep.Findings {
		if f.Action != judge.ActionRelease && f.Action != judge.ActionSuspect {
			continue
		}
		if age := staleAge(f, rep.DBNow); age > oldest {
			oldest = age
		}
	}
	return oldest
}

func staleAge(f reaper.Finding, now time.Time) time.Duration {
	var age time.Duration
	if f.FirstSeen != nil && !now.IsZero() {
		age = now.Sub(*f.FirstSeen)
	}
	var evidence *judge.Duration
	switch f.Verdict {
	case judge.VerdictTaskFinished:
		evidence = f.Evidence().FinishedAge
	case judge.VerdictOwnerDead, judge.VerdictTaskLost:
		evidence = f.Evidence().HeartbeatAge
	}
	if evidence != nil && time.Duration(*evidence) > age {
		age = time.Duration(*evidence)
	}
	return age
}
