package deploy

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8slabels "k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// prometheusPeer is how the values admit a Prometheus of the monitoring
// namespace: both selectors in one peer, so only its pods there.
var prometheusPeer = map[string]any{
	"namespaceSelector": map[string]any{"matchLabels": map[string]any{"kubernetes.io/metadata.name": "monitoring"}},
	"podSelector":       map[string]any{"matchLabels": map[string]any{"app.kubernetes.io/name": "prometheus"}},
}

// admits tells whether policy lets a pod with podLabels in a namespace with
// nsLabels (of the namespace named ns) connect to port of the pod, as a
// network plugin reads the rules: any rule whose peers and ports both match.
// Only the fields the chart renders are read; the policy is in the release's
// namespace.
func admits(t *testing.T, policy networkingv1.NetworkPolicy, ns string, nsLabels, podLabels map[string]string, port corev1.ContainerPort) bool {
	t.Helper()
	matches := func(sel *metav1.LabelSelector, labels map[string]string) bool {
		s, err := metav1.LabelSelectorAsSelector(sel)
		if err != nil {
			t.Fatalf("selector %v: %v", sel, err)
		}
		return s.Matches(k8slabels.Set(labels))
	}
	for _, rule := range policy.Spec.Ingress {
		peerOK := len(rule.From) == 0
		for _, p := range rule.From {
			if p.IPBlock != nil {
				continue
			}
			inNamespace := (p.NamespaceSelector == nil && ns == namespace) ||
				(p.NamespaceSelector != nil && matches(p.NamespaceSelector, nsLabels))
			if inNamespace && (p.PodSelector == nil || matches(p.PodSelector, podLabels)) {
				peerOK = true
			}
		}
		portOK := len(rule.Ports) == 0
		for _, p := range rule.Ports {
			tcp := p.Protocol == nil || *p.Protocol == corev1.ProtocolTCP
			if tcp && (p.Port == nil || *p.Port == intstr.FromString(port.Name) || *p.Port == intstr.FromInt32(port.ContainerPort)) {
				portOK = true
			}
		}
		if peerOK && portOK {
			return true
		}
	}
	return false
}

// TestNetworkPolicy: with networkPolicy.enabled, the daemon's port (the
// status page and /metrics) admits only the peers of networkPolicy.from,
// and Prometheus among them still scrapes it.
func TestNetworkPolicy(t *testing.T) {
	t.Parallel()
	if m := render(t, withDSNs(map[string]any{"mode": "deployment"})); len(m.networkPolicies) != 0 {
		t.Errorf("networkPolicy is off by default, yet rendered %q", m.kinds())
	}

	monitoring := map[string]string{"kubernetes.io/metadata.name": "monitoring"}
	prometheus := map[string]string{"app.kubernetes.io/name": "prometheus"}
	other := map[string]string{"kubernetes.io/metadata.name": "default"}
	for _, port := range []int{9090, 9464} {
		m := render(t, withDSNs(map[string]any{
			"mode":           "deployment",
			"metrics":        map[string]any{"port": port},
			"serviceMonitor": map[string]any{"enabled": true},
			"networkPolicy":  map[string]any{"enabled": true, "from": []any{prometheusPeer}},
		}))
		if len(m.networkPolicies) != 1 {
			t.Fatalf("networkPolicy.enabled rendered %q, want one NetworkPolicy", m.kinds())
		}
		np := m.networkPolicies[0]
		pod := m.deployments[0].Spec.Template
		sel, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
		if err != nil || sel.Empty() || !sel.Matches(k8slabels.Set(pod.Labels)) {
			t.Errorf("the policy's podSelector %v does not select the reaper's pod %v (%v)", np.Spec.PodSelector, pod.Labels, err)
		}
		if !slices.Equal(np.Spec.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}) {
			t.Errorf("policyTypes %q, want Ingress only: egress to Redis, PostgreSQL and the API server stays open", np.Spec.PolicyTypes)
		}
		c := reaperContainer(t, pod.Spec)
		if len(c.Ports) != 1 || c.Ports[0].ContainerPort != int32(port) {
			t.Fatalf("container ports %s, want %d", toJSON(c.Ports), port)
		}
		daemon := c.Ports[0]
		if !admits(t, np, "monitoring", monitoring, prometheus, daemon) {
			t.Errorf("port %d: the policy keeps Prometheus of networkPolicy.from from scraping:\n%s", port, toJSON(np.Spec))
		}
		for _, who := range []struct {
			ns          string
			nsLabels    map[string]string
			podLabels   map[string]string
			description string
		}{
			{"monitoring", monitoring, map[string]string{"app.kubernetes.io/name": "grafana"}, "another pod of the monitoring namespace"},
			{"default", other, prometheus, "a pod labelled as Prometheus in another namespace"},
			{namespace, map[string]string{"kubernetes.io/metadata.name": namespace}, map[string]string{"app": "pulp-api"}, "a pod of the release's namespace"},
		} {
			if admits(t, np, who.ns, who.nsLabels, who.podLabels, daemon) {
				t.Errorf("port %d: the policy admits %s", port, who.description)
			}
		}
	}

	// An empty from admits no pod: no rule at all, never a rule without
	// peers, which would admit every source.
	m := render(t, withDSNs(map[string]any{"mode": "deployment", "networkPolicy": map[string]any{"enabled": true}}))
	if len(m.networkPolicies) != 1 {
		t.Fatalf("networkPolicy.enabled rendered %q", m.kinds())
	}
	if np := m.networkPolicies[0]; len(np.Spec.Ingress) != 0 || !slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeIngress) {
		t.Errorf("an empty networkPolicy.from rendered %s, want Ingress with no rule", toJSON(np.Spec))
	}
}

func TestNetworkPolicyRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, want string
		vals       map[string]any
	}{
		{"cronjob", "needs mode: deployment", withDSNs(map[string]any{"networkPolicy": map[string]any{"enabled": true}})},
		{"sidecar", "needs mode: deployment", map[string]any{"mode": "sidecar", "existingSecret": "pulp-dsn", "networkPolicy": map[string]any{"enabled": true}}},
		{"scraped, nobody admitted", "Prometheus could not scrape", withDSNs(map[string]any{"mode": "deployment",
			"serviceMonitor": map[string]any{"enabled": true}, "networkPolicy": map[string]any{"enabled": true}})},
		{"an empty peer", "minProperties", withDSNs(map[string]any{"mode": "deployment",
			"networkPolicy": map[string]any{"enabled": true, "from": []any{map[string]any{}}}})},
		{"a misspelt peer", "namespaceSelectors", withDSNs(map[string]any{"mode": "deployment",
			"networkPolicy": map[string]any{"enabled": true, "from": []any{map[string]any{"namespaceSelectors": map[string]any{}}}}})},
	} {
		_, err := renderChart(loadChart(t), tc.vals)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: want an error saying %q, got %v", tc.name, tc.want, err)
		}
	}
	// Off, the option is ignored in every mode.
	render(t, withDSNs(map[string]any{"networkPolicy": map[string]any{"enabled": false, "from": []any{prometheusPeer}}}))
}
