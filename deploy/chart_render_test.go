package deploy

import (
	"fmt"
	"maps"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

const (
	chartDir    = repoRoot + "/charts/lock-reaper"
	releaseName = "pulp-reaper"
	namespace   = "pulp"
	fullname    = "pulp-reaper-lock-reaper"

	// The files that the container reads; see the chart's env.
	configFile      = "/etc/lock-reaper/config.yaml"
	redisURLFile    = "/etc/lock-reaper/redis-url"
	databaseURLFile = "/etc/lock-reaper/database-url"
)

// kubeVersion is the cluster version the chart is rendered and linted for:
// the oldest with native sidecars enabled by default is 1.29; 1.33 made them
// GA. Helm used as a library otherwise assumes 1.20.
var kubeVersion = chartutil.KubeVersion{Version: "v1.33.0", Major: "1", Minor: "33"}

// withDSNs are the least values that render: the chart-made Secret needs
// both DSNs.
func withDSNs(vals map[string]any) map[string]any {
	out := map[string]any{
		"redisUrl":    "redis://redis.pulp.svc:6379/0",
		"databaseUrl": "postgres://reaper:secret@db.pulp.svc:5432/pulp",
	}
	maps.Copy(out, vals)
	return out
}

func loadChart(t *testing.T) *chart.Chart {
	t.Helper()
	ch, err := loader.Load(chartDir)
	if err != nil {
		t.Fatalf("load chart: %v", err)
	}
	return ch
}

// renderChart renders like `helm template` with values validated against the
// schema and strict templates (a reference to a value that does not exist
// fails).
func renderChart(ch *chart.Chart, vals map[string]any) (map[string]string, error) {
	return renderChartFor(ch, vals, kubeVersion)
}

// renderChartFor renders as renderChart does for a cluster of version kv.
func renderChartFor(ch *chart.Chart, vals map[string]any, kv chartutil.KubeVersion) (map[string]string, error) {
	caps := chartutil.DefaultCapabilities.Copy()
	caps.KubeVersion = kv
	opts := chartutil.ReleaseOptions{Name: releaseName, Namespace: namespace, Revision: 1, IsInstall: true}
	top, err := chartutil.ToRenderValues(ch, vals, opts, caps)
	if err != nil {
		return nil, err
	}
	return engine.Engine{Strict: true}.Render(ch, top)
}

// manifests are the decoded objects of one rendering, each strictly decoded
// into its API type: a field the type does not have fails the decoding.
type manifests struct {
	cronJobs        []batchv1.CronJob
	deployments     []appsv1.Deployment
	configMaps      []corev1.ConfigMap
	secrets         []corev1.Secret
	services        []corev1.Service
	serviceAccounts []corev1.ServiceAccount
	serviceMonitors []serviceMonitor
	podMonitors     []podMonitor
	prometheusRules []prometheusRule
	roles           []rbacv1.Role
	roleBindings    []rbacv1.RoleBinding
	networkPolicies []networkingv1.NetworkPolicy
	// dashboards are the ConfigMaps named <fullname>-dashboard; configMaps
	// holds the others (the configuration file).
	dashboards []corev1.ConfigMap
	notes      string
}

func (m manifests) kinds() []string {
	var k []string
	add := func(kind string, n int) {
		for range n {
			k = append(k, kind)
		}
	}
	add("ConfigMap", len(m.configMaps))
	add("CronJob", len(m.cronJobs))
	add("Deployment", len(m.deployments))
	add("Secret", len(m.secrets))
	add("Service", len(m.services))
	add("ServiceAccount", len(m.serviceAccounts))
	add("ServiceMonitor", len(m.serviceMonitors))
	add("PodMonitor", len(m.podMonitors))
	add("PrometheusRule", len(m.prometheusRules))
	add("Role", len(m.roles))
	add("RoleBinding", len(m.roleBindings))
	add("NetworkPolicy", len(m.networkPolicies))
	add("ConfigMap(dashboard)", len(m.dashboards))
	sort.Strings(k)
	return k
}

// serviceMonitor is the part of the Prometheus Operator's
// monitoring.coreos.com/v1 ServiceMonitor that the chart may use; strict
// decoding into it catches a misspelt or misplaced field.
type serviceMonitor struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		Selector          metav1.LabelSelector `json:"selector"`
		NamespaceSelector *struct {
			Any        bool     `json:"any,omitempty"`
			MatchNames []string `json:"matchNames,omitempty"`
		} `json:"namespaceSelector,omitempty"`
		Endpoints []struct {
			Port          string `json:"port"`
			Path          string `json:"path"`
			Interval      string `json:"interval"`
			ScrapeTimeout string `json:"scrapeTimeout"`
		} `json:"endpoints"`
	} `json:"spec"`
}

// podMonitor is the part of the Prometheus Operator's PodMonitor that the
// chart may use, for strict decoding.
type podMonitor struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		Selector            metav1.LabelSelector `json:"selector"`
		PodMetricsEndpoints []struct {
			Port          string `json:"port"`
			Path          string `json:"path"`
			Interval      string `json:"interval"`
			ScrapeTimeout string `json:"scrapeTimeout"`
		} `json:"podMetricsEndpoints"`
	} `json:"spec"`
}

// prometheusRule is the Prometheus Operator's PrometheusRule, for strict
// decoding; its groups are those of a Prometheus rule file.
type prometheusRule struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		Groups []ruleGroup `json:"groups"`
	} `json:"spec"`
}

// ruleGroup is a group of a Prometheus rule file (alerting rules only).
type ruleGroup struct {
	Name  string `json:"name"`
	Rules []struct {
		Alert       string            `json:"alert"`
		Expr        string            `json:"expr"`
		For         string            `json:"for,omitempty"`
		Labels      map[string]string `json:"labels,omitempty"`
		Annotations map[string]string `json:"annotations,omitempty"`
	} `json:"rules"`
}

var documentSeparator = regexp.MustCompile(`(?m)^---[ \t]*$`)

// decodeRendered splits every rendered template into its YAML documents and
// decodes each strictly into the API type of its apiVersion and kind.
func decodeRendered(t *testing.T, rendered map[string]string) manifests {
	t.Helper()
	var m manifests
	for _, name := range slices.Sorted(maps.Keys(rendered)) {
		if path.Base(name) == "NOTES.txt" {
			m.notes = rendered[name]
			continue
		}
		if path.Ext(name) != ".yaml" {
			if strings.TrimSpace(rendered[name]) != "" {
				t.Fatalf("%s rendered to non-empty output", name)
			}
			continue
		}
		for i, doc := range documentSeparator.Split(rendered[name], -1) {
			var head map[string]any
			if err := yaml.Unmarshal([]byte(doc), &head); err != nil {
				t.Fatalf("%s, document %d: not YAML: %v\n%s", name, i, err, doc)
			}
			if head == nil {
				continue // empty, or only comments
			}
			where := fmt.Sprintf("%s, document %d", name, i)
			switch gvk := fmt.Sprintf("%v/%v", head["apiVersion"], head["kind"]); gvk {
			case "batch/v1/CronJob":
				m.cronJobs = append(m.cronJobs, strictDecode[batchv1.CronJob](t, where, doc))
			case "apps/v1/Deployment":
				m.deployments = append(m.deployments, strictDecode[appsv1.Deployment](t, where, doc))
			case "v1/ConfigMap":
				cm := strictDecode[corev1.ConfigMap](t, where, doc)
				if strings.HasSuffix(cm.Name, "-dashboard") {
					m.dashboards = append(m.dashboards, cm)
				} else {
					m.configMaps = append(m.configMaps, cm)
				}
			case "v1/Secret":
				m.secrets = append(m.secrets, strictDecode[corev1.Secret](t, where, doc))
			case "v1/Service":
				m.services = append(m.services, strictDecode[corev1.Service](t, where, doc))
			case "v1/ServiceAccount":
				m.serviceAccounts = append(m.serviceAccounts, strictDecode[corev1.ServiceAccount](t, where, doc))
			case "monitoring.coreos.com/v1/ServiceMonitor":
				m.serviceMonitors = append(m.serviceMonitors, strictDecode[serviceMonitor](t, where, doc))
			case "monitoring.coreos.com/v1/PodMonitor":
				m.podMonitors = append(m.podMonitors, strictDecode[podMonitor](t, where, doc))
			case "monitoring.coreos.com/v1/PrometheusRule":
				m.prometheusRules = append(m.prometheusRules, strictDecode[prometheusRule](t, where, doc))
			case "rbac.authorization.k8s.io/v1/Role":
				m.roles = append(m.roles, strictDecode[rbacv1.Role](t, where, doc))
			case "rbac.authorization.k8s.io/v1/RoleBinding":
				m.roleBindings = append(m.roleBindings, strictDecode[rbacv1.RoleBinding](t, where, doc))
			case "networking.k8s.io/v1/NetworkPolicy":
				m.networkPolicies = append(m.networkPolicies, strictDecode[networkingv1.NetworkPolicy](t, where, doc))
			default:
				t.Fatalf("%s: unexpected object %s", where, gvk)
			}
		}
	}
	return m
}

// strictDecode decodes YAML into T, failing on unknown and duplicate fields.
func strictDecode[T any](t *testing.T, where, doc string) T {
	t.Helper()
	var v T
	if err := yaml.UnmarshalStrict([]byte(doc), &v); err != nil {
		t.Fatalf("%s: does not decode strictly into %T: %v\n%s", where, v, err, doc)
	}
	return v
}

func render(t *testing.T, vals map[string]any) manifests {
	t.Helper()
	rendered, err := renderChart(loadChart(t), vals)
	if err != nil {
		t.Fatalf("render chart: %v", err)
	}
	return decodeRendered(t, rendered)
}

// readValuesFile reads a values file of the chart directory.
func readValuesFile(t *testing.T, name string) map[string]any {
	t.Helper()
	vals, err := chartutil.ReadValuesFile(filepath.Join(chartDir, name))
	if err != nil {
		t.Fatalf("read %s: %v", name, err)
	}
	return vals.AsMap()
}

func exampleFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(chartDir, "examples", "*.yaml"))
	if err != nil || len(files) < 3 {
		t.Fatalf("want at least three example values files, got %q (%v)", files, err)
	}
	for i, f := range files {
		files[i] = filepath.Join("examples", filepath.Base(f))
	}
	return files
}

// podOf is the pod template of the one workload of a rendering.
func podOf(t *testing.T, m manifests) corev1.PodTemplateSpec {
	t.Helper()
	switch {
	case len(m.cronJobs) == 1 && len(m.deployments) == 0:
		return m.cronJobs[0].Spec.JobTemplate.Spec.Template
	case len(m.deployments) == 1 && len(m.cronJobs) == 0:
		return m.deployments[0].Spec.Template
	}
	t.Fatalf("want one workload, got kinds %q", m.kinds())
	return corev1.PodTemplateSpec{}
}

func reaperContainer(t *testing.T, pod corev1.PodSpec) corev1.Container {
	t.Helper()
	if len(pod.Containers) != 1 || len(pod.InitContainers) != 0 {
		t.Fatalf("want exactly one container, got %d containers and %d init containers", len(pod.Containers), len(pod.InitContainers))
	}
	return pod.Containers[0]
}
