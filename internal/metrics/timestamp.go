package metrics

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// timestampGauge is a gauge that is absent until it is first set.
//
// A plain gauge would read 0 before the first completed pass, and a
// Pushgateway receiving that 0 with add semantics would overwrite the time of
// the last success that an earlier CronJob pushed. Absent, it leaves the
// earlier value alone, and an alert on the age of the last success keeps
// measuring from the right moment.
type timestampGauge struct {
	desc *prometheus.Desc
	mu   sync.Mutex
	at   time.Time
}

func newTimestampGauge(desc *prometheus.Desc) *timestampGauge {
	return &timestampGauge{desc: desc}
}

func (g *timestampGauge) set(t time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.at = t
}

// Describe implements prometheus.Collector.
func (g *timestampGauge) Describe(ch chan<- *prometheus.Desc) { ch <- g.desc }

// Collect implements prometheus.Collector.
func (g *timestampGauge) Collect(ch chan<- prometheus.Metric) {
	g.mu.Lock()
	at := g.at
	g.mu.Unlock()
	if at.IsZero() {
		return
	}
	ch <- prometheus.MustNewConstMetric(g.desc, prometheus.GaugeValue, float64(at.UnixNano())/1e9)
}
