package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/lock-reaper/lock-reaper/reaper"
)

// Names of the Kubernetes evidence metrics.
const (
	NameKubernetesReads  = "lock_reaper_kubernetes_reads_total"
	NameKubernetesOwners = "lock_reaper_kubernetes_owners"
	// NameKubernetesEventFailures counts the Events about pods a pass did
	// not get written (kubeevents.Recorder).
	NameKubernetesEventFailures = "lock_reaper_kubernetes_event_failures_total"
)

// kubeMetrics count the passes' pod reads and the owners by evidence. A
// pass with Kubernetes off adds nothing.
type kubeMetrics struct {
	reads         *prometheus.CounterVec
	owners        *prometheus.GaugeVec
	eventFailures prometheus.Counter
}

func newKubeMetrics() *kubeMetrics {
	k := &kubeMetrics{
		reads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "kubernetes_reads_total",
			Help: "Pods lists of passes, by result: ok, or unavailable (the pass judged by heartbeats alone).",
		}, []string{"result"}),
		owners: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: namespace, Name: "kubernetes_owners",
			Help: "AppStatus owner names of the last pass that read the pods, by the Kubernetes rule that decided their evidence; " +
				"evidence=\"alive-not-heartbeating\" counts workers alive by Kubernetes but not heartbeating.",
		}, []string{"evidence"}),
		eventFailures: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: namespace, Name: "kubernetes_event_failures_total",
			Help: "Kubernetes Events about pods (LocksReleased, TasksCanceled, TaskRequeued, MassDeathHold) that passes could not write: refused (no create on events) or failed; the passes are unaffected.",
		}),
	}
	for _, r := range []string{reaper.KubernetesRead, reaper.KubernetesUnavailable} {
		k.reads.WithLabelValues(r)
	}
	for _, rule := range reaper.EvidenceRules {
		k.owners.WithLabelValues(string(rule))
	}
	return k
}

func (k *kubeMetrics) observe(rep *reaper.Report) {
	kr := rep.Kubernetes
	if kr == nil {
		return
	}
	k.reads.WithLabelValues(kr.Read).Inc()
	if kr.Read != reaper.KubernetesRead {
		return
	}
	for _, rule := range reaper.EvidenceRules {
		k.owners.WithLabelValues(string(rule)).Set(float64(kr.OwnersByEvidence[rule]))
	}
}

// KubernetesEventFailures counts n Events a pass could not write.
func (m *Metrics) KubernetesEventFailures(n int) {
	if n > 0 {
		m.kube.eventFailures.Add(float64(n))
	}
}
