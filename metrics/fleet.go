package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lock-reaper/lock-reaper/heartbeat"
	"github.com/lock-reaper/lock-reaper/reaper"
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
			Help: "Tasks the last completed pass found lost, orphaned or stuck, by verdict, whatever became of them.",
		}, []string{"verdict"}),
		oldestStale: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: namespace, Name: "oldest_stale_holding_age_seconds",
			Help: "Age, on the database clock, of the oldest holding the last completed pass found stale (to be released or confirmed), counted from its first sighting; 0 when none is or when all were first seen by that pass.",
		}),
	}
}

func (f *fleet) initSeries() {
	for _, l := range livenesses {
		f.holdings.WithLabelValues(l.String())
		f.owners.WithLabelValues(l.String())
	}
	for _, v := range taskVerdicts {
		f.lostTasks.WithLabelValues(string(v))
	}
}

// observe sets the fleet gauges from a completed pass that read the locks.
func (f *fleet) observe(rep *reaper.Report) {
	holdings := map[string]int{}
	owners := map[string]int{}
	for _, o := range rep.Owners {
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

	lost := map[reaper.Verdict]int{}
	for _, t := range rep.Tasks {
		lost[t.Verdict]++
	}
	for _, v := range taskVerdicts {
		f.lostTasks.WithLabelValues(string(v)).Set(float64(lost[v]))
		delete(lost, v)
	}
	for v, n := range lost {
		f.lostTasks.WithLabelValues(string(v)).Set(float64(n))
	}

	f.oldestStale.Set(oldestStaleAge(rep).Seconds())
}

// oldestStaleAge is how long the oldest stale holding of the report has been
// seen. Only suspects carry their first sighting across passes; a holding
// released at first sight is 0 old, which is right: it did not wait.
func oldestStaleAge(rep *reaper.Report) time.Duration {
	var oldest time.Duration
	for _, f := range rep.Findings {
		if f.Action != reaper.ActionRelease && f.Action != reaper.ActionSuspect {
			continue
		}
		if f.FirstSeen == nil || rep.DBNow.IsZero() {
			continue
		}
		if age := rep.DBNow.Sub(*f.FirstSeen); age > oldest {
			oldest = age
		}
	}
	return oldest
}
