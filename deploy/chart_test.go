package deploy

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8slabels "k8s.io/apimachinery/pkg/labels"
)

func TestChartRendersEachMode(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		vals  map[string]any
		kinds []string
	}{
		{"cronjob", withDSNs(nil), []string{"ConfigMap", "CronJob", "Secret", "ServiceAccount"}},
		{"deployment", withDSNs(map[string]any{"mode": "deployment"}), []string{"ConfigMap", "Deployment", "Secret", "Service", "ServiceAccount"}},
		{"deployment with ServiceMonitor", withDSNs(map[string]any{"mode": "deployment", "serviceMonitor": map[string]any{"enabled": true}}),
			[]string{"ConfigMap", "Deployment", "Secret", "Service", "ServiceAccount", "ServiceMonitor"}},
		{"deployment with NetworkPolicy", withDSNs(map[string]any{"mode": "deployment", "networkPolicy": map[string]any{"enabled": true}}),
			[]string{"ConfigMap", "Deployment", "NetworkPolicy", "Secret", "Service", "ServiceAccount"}},
		{"sidecar", withDSNs(map[string]any{"mode": "sidecar"}), []string{"ConfigMap", "Secret"}},
		{"sidecar with existingSecret", map[string]any{"mode": "sidecar", "existingSecret": "pulp-dsn"}, []string{"ConfigMap"}},
		{"sidecar with PodMonitor", map[string]any{"mode": "sidecar", "existingSecret": "pulp-dsn",
			"podMonitor": map[string]any{"enabled": true, "selector": map[string]any{"app.kubernetes.io/component": "worker"}}},
			[]string{"ConfigMap", "PodMonitor"}},
		{"pulp-operator", map[string]any{"pulp": map[string]any{"cr": "galaxy"}}, []string{"ConfigMap", "CronJob", "Role", "RoleBinding", "ServiceAccount"}},
		{"kubernetes evidence", withDSNs(map[string]any{"mode": "deployment", "kubernetes": map[string]any{"enabled": true}}),
			[]string{"ConfigMap", "Deployment", "Role", "RoleBinding", "Secret", "Service", "ServiceAccount"}},
		{"alerts and dashboard", withDSNs(map[string]any{"prometheusRule": map[string]any{"enabled": true}, "grafanaDashboard": map[string]any{"enabled": true},
			"config": map[string]any{"pushgateway_url": "http://pushgateway.monitoring:9091"}}),
			[]string{"ConfigMap", "ConfigMap(dashboard)", "CronJob", "PrometheusRule", "Secret", "ServiceAccount"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := render(t, tc.vals)
			if got := m.kinds(); !slices.Equal(got, tc.kinds) {
				t.Errorf("rendered %q, want %q", got, tc.kinds)
			}
			if strings.TrimSpace(m.notes) == "" {
				t.Error("NOTES.txt rendered empty")
			}
		})
	}
}

func TestCronJob(t *testing.T) {
	t.Parallel()
	m := render(t, withDSNs(nil))
	cj := m.cronJobs[0]

	if cj.Name != fullname {
		t.Errorf("CronJob name %q, want %q", cj.Name, fullname)
	}
	if cj.Spec.Schedule != "*/5 * * * *" {
		t.Errorf("default schedule %q, want */5 * * * *", cj.Spec.Schedule)
	}
	if cj.Spec.ConcurrencyPolicy != batchv1.ForbidConcurrent {
		t.Errorf("concurrencyPolicy %q, want Forbid", cj.Spec.ConcurrencyPolicy)
	}
	checkCronJobTiming(t, cj)
	if cj.Spec.SuccessfulJobsHistoryLimit == nil || cj.Spec.FailedJobsHistoryLimit == nil {
		t.Error("CronJob lacks successfulJobsHistoryLimit or failedJobsHistoryLimit")
	}
	job := cj.Spec.JobTemplate.Spec
	if job.TTLSecondsAfterFinished == nil {
		t.Error("Job template lacks ttlSecondsAfterFinished")
	}
	if job.BackoffLimit == nil || *job.BackoffLimit != 0 {
		t.Errorf("backoffLimit %v, want 0: the next scheduled pass is the retry", job.BackoffLimit)
	}

	pod := job.Template.Spec
	if pod.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("restartPolicy %q, want Never", pod.RestartPolicy)
	}
	checkRestrictedPod(t, pod)
	c := reaperContainer(t, pod)
	if !slices.Equal(c.Args, []string{"once"}) || len(c.Command) != 0 {
		t.Errorf("container command %q args %q, want the image's entrypoint with args [once]", c.Command, c.Args)
	}
	if c.Image != "ghcr.io/lock-reaper/lock-reaper:"+loadChart(t).Metadata.AppVersion {
		t.Errorf("image %q does not default to the chart's appVersion", c.Image)
	}
	if c.LivenessProbe != nil || c.ReadinessProbe != nil || len(c.Ports) != 0 {
		t.Error("`lock-reaper once` serves no HTTP; it needs no probes or ports")
	}
	checkFiles(t, pod, c, fullname, "redis-url", "database-url")
}

// checkCronJobTiming checks that a pass is killed before the next one is
// due and that a late start does not reach into the next slot.
func checkCronJobTiming(t *testing.T, cj batchv1.CronJob) {
	t.Helper()
	interval, err := cronInterval(cj.Spec.Schedule)
	if err != nil {
		t.Fatalf("schedule %q: %v", cj.Spec.Schedule, err)
	}
	active := cj.Spec.JobTemplate.Spec.ActiveDeadlineSeconds
	if active == nil || time.Duration(*active)*time.Second >= interval {
		t.Errorf("activeDeadlineSeconds %v is not shorter than the schedule interval %s", active, interval)
	}
	starting := cj.Spec.StartingDeadlineSeconds
	if starting == nil || time.Duration(*starting)*time.Second >= interval {
		t.Errorf("startingDeadlineSeconds %v is not shorter than the schedule interval %s", starting, interval)
	}
}

func TestCronJobDeadlineLongerThanScheduleFails(t *testing.T) {
	t.Parallel()
	for _, schedule := range []string{"*/2 * * * *", "*/4 * * * *"} {
		_, err := renderChart(loadChart(t), withDSNs(map[string]any{"cronjob": map[string]any{"schedule": schedule}}))
		if err == nil || !strings.Contains(err.Error(), "activeDeadlineSeconds") {
			t.Errorf("schedule %q with activeDeadlineSeconds 240: want a render error about activeDeadlineSeconds, got %v", schedule, err)
		}
	}
	// An interval the chart cannot work out is left to the user.
	render(t, withDSNs(map[string]any{"cronjob": map[string]any{"schedule": "0 3 * * 1-5"}}))
}

func TestDeployment(t *testing.T) {
	t.Parallel()
	m := render(t, withDSNs(map[string]any{"mode": "deployment"}))
	d := m.deployments[0]

	if d.Spec.Replicas == nil || *d.Spec.Replicas != 1 {
		t.Errorf("replicas %v, want 1", d.Spec.Replicas)
	}
	if d.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
		t.Errorf("strategy %q, want Recreate so that a rollout never runs two daemons", d.Spec.Strategy.Type)
	}
	selector, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil || !selector.Matches(k8slabels.Set(d.Spec.Template.Labels)) {
		t.Errorf("selector %v does not match the pod labels %v (%v)", d.Spec.Selector, d.Spec.Template.Labels, err)
	}

	pod := d.Spec.Template.Spec
	checkRestrictedPod(t, pod)
	c := reaperContainer(t, pod)
	if !slices.Equal(c.Args, []string{"run"}) {
		t.Errorf("args %q, want [run]", c.Args)
	}
	if len(c.Ports) != 1 || c.Ports[0].Name != "metrics" || c.Ports[0].ContainerPort != 9090 {
		t.Errorf("ports %s, want 9090 named metrics", toJSON(c.Ports))
	}
	checkHTTPProbe(t, "liveness", c.LivenessProbe, "/livez", "metrics")
	checkHTTPProbe(t, "readiness", c.ReadinessProbe, "/readyz", "metrics")
	checkFiles(t, pod, c, fullname, "redis-url", "database-url")

	cfg := configOf(t, m)
	if cfg["listen"] != ":9090" {
		t.Errorf("config listen %v, want :9090 to match the container port", cfg["listen"])
	}

	svc := m.services[0]
	if !svc.Spec.PublishNotReadyAddresses {
		t.Error("the metrics Service must publish unready addresses: the reaper is unready exactly when its metrics matter")
	}
	if !subsetOf(svc.Spec.Selector, d.Spec.Template.Labels) {
		t.Errorf("Service selector %v does not match the pod labels %v", svc.Spec.Selector, d.Spec.Template.Labels)
	}
	if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Name != "metrics" || svc.Spec.Ports[0].TargetPort.String() != "metrics" {
		t.Errorf("Service ports %s, want one named metrics targeting the metrics port", toJSON(svc.Spec.Ports))
	}
}

func TestServiceMonitor(t *testing.T) {
	t.Parallel()
	m := render(t, withDSNs(map[string]any{
		"mode":           "deployment",
		"serviceMonitor": map[string]any{"enabled": true, "labels": map[string]any{"release": "prom"}},
	}))
	sm := m.serviceMonitors[0]
	if sm.Labels["release"] != "prom" {
		t.Errorf("ServiceMonitor labels %v lack serviceMonitor.labels", sm.Labels)
	}
	if !subsetOf(sm.Spec.Selector.MatchLabels, m.services[0].Labels) {
		t.Errorf("ServiceMonitor selector %v does not select the Service (labels %v)", sm.Spec.Selector.MatchLabels, m.services[0].Labels)
	}
	if len(sm.Spec.Endpoints) != 1 || sm.Spec.Endpoints[0].Port != "metrics" || sm.Spec.Endpoints[0].Path != "/metrics" {
		t.Errorf("ServiceMonitor endpoints %s, want /metrics on port metrics", toJSON(sm.Spec.Endpoints))
	}

	for _, mode := range []string{"cronjob", "sidecar"} {
		_, err := renderChart(loadChart(t), withDSNs(map[string]any{"mode": mode, "serviceMonitor": map[string]any{"enabled": true}}))
		if err == nil || !strings.Contains(err.Error(), "mode: deployment") {
			t.Errorf("mode %s with serviceMonitor.enabled: want an error saying it needs mode: deployment, got %v", mode, err)
		}
	}
}

func TestConfigMapCarriesConfig(t *testing.T) {
	t.Parallel()
	config := map[string]any{
		"heartbeat_grace":   "45s",
		"lost_running":      "failed",
		"max_dead_fraction": 0.25,
		"max_releases":      20000,
		"redis":             map[string]any{"scan_count": 500, "timeout": "3s"},
		"log":               map[string]any{"format": "json"},
	}
	m := render(t, withDSNs(map[string]any{"config": config}))
	got := configOf(t, m)
	want, _ := json.Marshal(config)
	if have, _ := json.Marshal(got); string(have) != string(want) {
		t.Errorf("config.yaml is %s, want %s (and no listen in cronjob mode)", have, want)
	}
	if len(m.secrets) != 1 || m.secrets[0].StringData["redis-url"] == "" || m.secrets[0].StringData["database-url"] == "" {
		t.Errorf("chart-made Secret %s lacks the DSNs", toJSON(m.secrets))
	}
	if _, err := renderChart(loadChart(t), map[string]any{}); err == nil || !strings.Contains(err.Error(), "redisUrl") {
		t.Errorf("without DSNs or existingSecret: want an error asking for redisUrl, got %v", err)
	}
}

func TestConfigChecksumAnnotation(t *testing.T) {
	t.Parallel()
	checksum := func(vals map[string]any) string {
		t.Helper()
		m := render(t, withDSNs(vals))
		pod := podOf(t, m)
		sum := pod.Annotations["checksum/config"]
		// The annotation is the checksum of what the ConfigMap holds.
		content := strings.TrimSuffix(m.configMaps[0].Data["config.yaml"], "\n")
		if h := sha256.Sum256([]byte(content)); sum != hex.EncodeToString(h[:]) {
			t.Errorf("checksum/config %q is not the sha256 of the ConfigMap's config.yaml", sum)
		}
		return sum
	}
	for _, mode := range []string{"cronjob", "deployment"} {
		base := checksum(map[string]any{"mode": mode, "config": map[string]any{"heartbeat_grace": "30s"}})
		if again := checksum(map[string]any{"mode": mode, "config": map[string]any{"heartbeat_grace": "30s"}}); again != base {
			t.Errorf("%s: the same config gave checksums %s and %s", mode, base, again)
		}
		if changed := checksum(map[string]any{"mode": mode, "config": map[string]any{"heartbeat_grace": "45s"}}); changed == base {
			t.Errorf("%s: checksum/config did not change with the config", mode)
		}
		if unrelated := checksum(map[string]any{"mode": mode, "config": map[string]any{"heartbeat_grace": "30s"}, "podLabels": map[string]any{"team": "pulp"}}); unrelated != base {
			t.Errorf("%s: checksum/config changed with podLabels", mode)
		}
	}
}

func TestExistingSecret(t *testing.T) {
	t.Parallel()
	m := render(t, map[string]any{
		"existingSecret": "pulp-dsn",
		"secretKeys":     map[string]any{"redisUrl": "REDIS_URL", "databaseUrl": "DATABASE_URL"},
	})
	if len(m.secrets) != 0 {
		t.Errorf("with existingSecret the chart made a Secret %q", m.secrets[0].Name)
	}
	pod := podOf(t, m).Spec
	checkFiles(t, pod, reaperContainer(t, pod), "pulp-dsn", "REDIS_URL", "DATABASE_URL")
	if _, ok := podOf(t, m).Annotations["checksum/secret"]; ok {
		t.Error("checksum/secret of a Secret the chart does not manage")
	}
}

// TestExamples renders each example values file and checks every object.
func TestExamples(t *testing.T) {
	t.Parallel()
	for _, file := range exampleFiles(t) {
		t.Run(filepath.Base(file), func(t *testing.T) {
			t.Parallel()
			vals := readValuesFile(t, file)
			m := render(t, vals)
			if len(m.configMaps) != 1 {
				t.Errorf("want one ConfigMap, got %d", len(m.configMaps))
			}
			if vals["mode"] == "sidecar" {
				if len(m.cronJobs)+len(m.deployments) != 0 {
					t.Errorf("sidecar mode rendered a workload: %q", m.kinds())
				}
				return
			}
			pod := podOf(t, m).Spec
			checkRestrictedPod(t, pod)
			for _, cj := range m.cronJobs {
				checkCronJobTiming(t, cj)
			}
			if sm, _ := vals["serviceMonitor"].(map[string]any); sm != nil && sm["enabled"] == true && len(m.serviceMonitors) != 1 {
				t.Error("serviceMonitor.enabled rendered no ServiceMonitor")
			}
			if pulp, _ := vals["pulp"].(map[string]any); pulp != nil && pulp["cr"] != nil {
				checkPulpExample(t, pod, pulp)
				return
			}
			secretName, _ := vals["existingSecret"].(string)
			if secretName == "" {
				secretName = fullname
			}
			keys, _ := vals["secretKeys"].(map[string]any)
			redisKey, databaseKey := "redis-url", "database-url"
			if keys != nil {
				redisKey, databaseKey = keys["redisUrl"].(string), keys["databaseUrl"].(string)
			}
			checkFiles(t, pod, reaperContainer(t, pod), secretName, redisKey, databaseKey)
		})
	}
}

// TestExampleCoverage keeps the examples covering what the brief of the chart
// promises: a cronjob, a deployment with a ServiceMonitor, an existingSecret.
func TestExampleCoverage(t *testing.T) {
	t.Parallel()
	var cron, monitored, existing bool
	for _, file := range exampleFiles(t) {
		vals := readValuesFile(t, file)
		mode, _ := vals["mode"].(string)
		sm, _ := vals["serviceMonitor"].(map[string]any)
		cron = cron || mode == "cronjob"
		monitored = monitored || (mode == "deployment" && sm != nil && sm["enabled"] == true)
		existing = existing || vals["existingSecret"] != nil
	}
	if !cron || !monitored || !existing {
		t.Errorf("examples cover cronjob=%v, deployment with serviceMonitor=%v, existingSecret=%v; want all", cron, monitored, existing)
	}
}

func TestHelmLint(t *testing.T) {
	t.Parallel()
	files := append([]string{""}, exampleFiles(t)...)
	for _, file := range files {
		name := file
		if name == "" {
			name = "values.yaml"
		}
		t.Run(filepath.Base(name), func(t *testing.T) {
			t.Parallel()
			var vals map[string]any
			if file != "" {
				vals = readValuesFile(t, file)
			}
			// lint.All is AllWithKubeVersion for Kubernetes 1.20, which the
			// chart's kubeVersion excludes, and it ignores its strict
			// argument: as `helm lint --strict` does, warnings fail here.
			linter := lint.AllWithKubeVersion(chartDir, vals, namespace, &kubeVersion)
			for _, msg := range linter.Messages {
				if msg.Severity >= support.WarningSev {
					t.Errorf("helm lint: %s", msg.Error())
				} else {
					t.Logf("helm lint: %s", msg.Error())
				}
			}
		})
	}
}
