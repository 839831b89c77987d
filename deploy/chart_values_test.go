package deploy

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"
)

// escapeHatches are the values every chart user expects, each with a value
// that must reach the rendered pod as it is.
var escapeHatches = map[string]string{
	"affinity": `
nodeAffinity:
  requiredDuringSchedulingIgnoredDuringExecution:
    nodeSelectorTerms:
      - matchExpressions:
          - {key: kubernetes.io/arch, operator: In, values: [amd64, arm64]}`,
	"nodeSelector": `{kubernetes.io/os: linux}`,
	"tolerations":  `[{key: dedicated, operator: Equal, value: pulp, effect: NoSchedule}]`,
	"topologySpreadConstraints": `
- maxSkew: 1
  topologyKey: topology.kubernetes.io/zone
  whenUnsatisfiable: ScheduleAnyway
  labelSelector: {matchLabels: {app.kubernetes.io/name: lock-reaper}}`,
	"priorityClassName":  `pulp-infrastructure`,
	"podAnnotations":     `{example.com/owner: pulp-team}`,
	"podLabels":          `{team: pulp}`,
	"extraEnv":           `[{name: REAPER_REDIS_TLS_CA_FILE, value: /etc/pulp-ca/ca.crt}, {name: POD_NAME, valueFrom: {fieldRef: {fieldPath: metadata.name}}}]`,
	"extraEnvFrom":       `[{configMapRef: {name: reaper-extra}, prefix: REAPER_}]`,
	"extraVolumes":       `[{name: pulp-ca, configMap: {name: pulp-ca}}]`,
	"extraVolumeMounts":  `[{name: pulp-ca, mountPath: /etc/pulp-ca, readOnly: true}]`,
	"podSecurityContext": `{supplementalGroups: [1001]}`,
	"securityContext":    `{runAsUser: 65532}`,
}

// podField returns what the pod (or its reaper container) holds for a value.
func podField(t *testing.T, pod corev1.PodTemplateSpec, key string) any {
	t.Helper()
	c := reaperContainer(t, pod.Spec)
	switch key {
	case "affinity":
		return pod.Spec.Affinity
	case "nodeSelector":
		return pod.Spec.NodeSelector
	case "tolerations":
		return pod.Spec.Tolerations
	case "topologySpreadConstraints":
		return pod.Spec.TopologySpreadConstraints
	case "priorityClassName":
		return pod.Spec.PriorityClassName
	case "podAnnotations":
		return pod.Annotations["example.com/owner"]
	case "podLabels":
		return pod.Labels["team"]
	case "extraEnv":
		return c.Env[len(c.Env)-2:]
	case "extraEnvFrom":
		return c.EnvFrom
	case "extraVolumes":
		return pod.Spec.Volumes[1:]
	case "extraVolumeMounts":
		return c.VolumeMounts[1:]
	case "podSecurityContext":
		return pod.Spec.SecurityContext.SupplementalGroups
	case "securityContext":
		return *c.SecurityContext.RunAsUser
	}
	t.Fatalf("no pod field for %s", key)
	return nil
}

// wantField is what podField must return for the value raw of key.
func wantField(t *testing.T, key, raw string) any {
	t.Helper()
	decode := func(into any) any {
		if err := yaml.UnmarshalStrict([]byte(raw), into); err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		return reflect.ValueOf(into).Elem().Interface()
	}
	switch key {
	case "affinity":
		return decode(new(*corev1.Affinity))
	case "nodeSelector":
		return decode(new(map[string]string))
	case "tolerations":
		return decode(new([]corev1.Toleration))
	case "topologySpreadConstraints":
		return decode(new([]corev1.TopologySpreadConstraint))
	case "priorityClassName":
		return raw
	case "podAnnotations":
		return "pulp-team"
	case "podLabels":
		return "pulp"
	case "extraEnv":
		return decode(new([]corev1.EnvVar))
	case "extraEnvFrom":
		return decode(new([]corev1.EnvFromSource))
	case "extraVolumes":
		return decode(new([]corev1.Volume))
	case "extraVolumeMounts":
		return decode(new([]corev1.VolumeMount))
	case "podSecurityContext":
		return []int64{1001}
	case "securityContext":
		return int64(65532)
	}
	t.Fatalf("no expectation for %s", key)
	return nil
}

// TestEscapeHatches renders each value in both workload modes and checks it
// lands in the pod as given, that values.yaml lists it and that the schema
// accepts it, while the pod stays restricted.
func TestEscapeHatches(t *testing.T) {
	t.Parallel()
	defaults := loadChart(t).Values
	for key, raw := range escapeHatches {
		t.Run(key, func(t *testing.T) {
			t.Parallel()
			if _, ok := defaults[key]; !ok {
				t.Errorf("values.yaml does not list %s", key)
			}
			var value any
			if err := yaml.Unmarshal([]byte(raw), &value); err != nil {
				t.Fatal(err)
			}
			for _, mode := range []string{"cronjob", "deployment"} {
				m := render(t, withDSNs(map[string]any{"mode": mode, key: value}))
				pod := podOf(t, m)
				checkRestrictedPod(t, pod.Spec)
				if got, want := podField(t, pod, key), wantField(t, key, raw); !reflect.DeepEqual(got, want) {
					t.Errorf("%s: %s renders as %s, want %s", mode, key, toJSON(got), toJSON(want))
				}
			}
		})
	}
}

func TestEscapeHatchesSchema(t *testing.T) {
	t.Parallel()
	for _, vals := range []map[string]any{
		{"affinity": map[string]any{"nodeAfinity": map[string]any{}}},
		{"topologySpreadConstraints": []any{map[string]any{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "Sometimes"}}},
		{"extraEnv": []any{map[string]any{"value": "no name"}}},
		{"extraEnv": []any{map[string]any{"name": "A", "valu": "typo"}}},
		{"extraEnvFrom": []any{map[string]any{"secretRef": map[string]any{"nam": "x"}}}},
		{"extraVolumes": []any{map[string]any{"configMap": map[string]any{"name": "no volume name"}}}},
		{"extraVolumeMounts": []any{map[string]any{"name": "ca", "mountPath": "relative/path"}}},
		{"securityContext": map[string]any{"runAsUsr": 1}},
		{"podSecurityContext": map[string]any{"fsGroup": -1}},
		{"kubernetes": map[string]any{"enabled": "auto"}},
		{"pulp": map[string]any{"cr": "Not_A_Name"}},
		{"pulp": map[string]any{"database": map[string]any{"external_db_secret": "x"}}},
	} {
		if err := validate(t, withDSNs(vals)); err == nil {
			t.Errorf("%s: the schema accepted it", toJSON(vals))
		}
	}
}

// TestOpenShiftSecurityContext: with runAsUser, runAsGroup and fsGroup set
// to null (OpenShift assigns them), they are gone and the rest stays
// restricted.
func TestOpenShiftSecurityContext(t *testing.T) {
	t.Parallel()
	vals, err := chartutil.ReadValues([]byte(`
podSecurityContext: {runAsUser: null, runAsGroup: null, fsGroup: null}
securityContext: {runAsUser: null, runAsGroup: null}
`))
	if err != nil {
		t.Fatal(err)
	}
	if err := validate(t, withDSNs(vals.AsMap())); err != nil {
		t.Fatalf("schema: %v", err)
	}
	pod := podOf(t, render(t, withDSNs(vals.AsMap()))).Spec
	checkRestrictedPod(t, pod)
	sc, csc := pod.SecurityContext, reaperContainer(t, pod).SecurityContext
	if sc.RunAsUser != nil || sc.RunAsGroup != nil || sc.FSGroup != nil || csc.RunAsUser != nil || csc.RunAsGroup != nil {
		t.Errorf("null did not unset the UID and GID: pod %s, container %s", toJSON(sc), toJSON(csc))
	}
	// By default the UID is the image's nonroot user, at both levels.
	def := podOf(t, render(t, withDSNs(nil))).Spec
	if def.SecurityContext.RunAsUser == nil || *def.SecurityContext.RunAsUser != 65532 ||
		reaperContainer(t, def).SecurityContext.RunAsUser == nil || *reaperContainer(t, def).SecurityContext.RunAsUser != 65532 {
		t.Errorf("default securityContext does not run as %s", nonrootUID)
	}
}

// TestKubernetesRBAC: the Role grants each mode only the verbs its command
// uses on pods. `once` lists them once per pass (heartbeat/kube's Source);
// `run` lists them and then watches them (its informer, heartbeat/kube's
// Watcher). Neither gets a pod by name, and the chart sets
// kubernetes.enabled explicitly, so auto's trial watch is never made. Both
// write the Events of their passes (core/v1 events, create and patch) about
// the worker pods, and about the reaper's own pod, named by the downward
// API, in the release's namespace: a second Role there when the pods'
// namespace is another.
func TestKubernetesRBAC(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, mode, wantNamespace string
		kube                      map[string]any
		wantVerbs                 []string
	}{
		{"release namespace", "deployment", namespace, map[string]any{"enabled": true}, []string{"list", "watch"}},
		{"other namespace", "deployment", "pulp-workers", map[string]any{"enabled": true, "namespace": "pulp-workers",
			"selector": "app.kubernetes.io/component=worker", "container": "worker"}, []string{"list", "watch"}},
		{"cronjob", "cronjob", namespace, map[string]any{"enabled": true}, []string{"list"}},
		{"cronjob, other namespace", "cronjob", "pulp-workers", map[string]any{"enabled": true, "namespace": "pulp-workers"}, []string{"list"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := render(t, withDSNs(map[string]any{"mode": tc.mode, "kubernetes": tc.kube}))
			wantRoles := 1
			if tc.wantNamespace != namespace {
				wantRoles = 2
			}
			if len(m.roles) != wantRoles || len(m.roleBindings) != wantRoles {
				t.Fatalf("rendered %q, want %d Roles and RoleBindings", m.kinds(), wantRoles)
			}
			role, binding := m.roles[0], m.roleBindings[0]
			events := rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}}
			want := []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: tc.wantVerbs}, events}
			if !reflect.DeepEqual(role.Rules, want) {
				t.Errorf("%s: Role rules %s, want %q on pods and events' create and patch only", tc.mode, toJSON(role.Rules), tc.wantVerbs)
			}
			if wantRoles == 2 {
				own, ownBinding := m.roles[1], m.roleBindings[1]
				if own.Namespace != namespace || ownBinding.Namespace != namespace || !reflect.DeepEqual(own.Rules, []rbacv1.PolicyRule{events}) {
					t.Errorf("second Role %s in %q (binding in %q), want events' create and patch only in the release's %q",
						toJSON(own.Rules), own.Namespace, ownBinding.Namespace, namespace)
				}
				if ownBinding.RoleRef.Name != own.Name || len(ownBinding.Subjects) != 1 || ownBinding.Subjects[0].Name != podOf(t, m).Spec.ServiceAccountName {
					t.Errorf("second RoleBinding %s does not bind the Role %s to the pod's ServiceAccount", toJSON(ownBinding), own.Name)
				}
			}
			if role.Namespace != tc.wantNamespace || binding.Namespace != tc.wantNamespace {
				t.Errorf("Role in %q, RoleBinding in %q, want %q", role.Namespace, binding.Namespace, tc.wantNamespace)
			}
			if binding.RoleRef != (rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: role.Name}) {
				t.Errorf("RoleBinding refers to %+v, not the Role %s", binding.RoleRef, role.Name)
			}
			pod := podOf(t, m).Spec
			wantSubject := rbacv1.Subject{Kind: "ServiceAccount", Name: pod.ServiceAccountName, Namespace: namespace}
			if !slices.Equal(binding.Subjects, []rbacv1.Subject{wantSubject}) {
				t.Errorf("RoleBinding subjects %s, want the pod's ServiceAccount %s", toJSON(binding.Subjects), toJSON(wantSubject))
			}
			checkRestrictedPod(t, pod) // which also wants the token mounted
			c := reaperContainer(t, pod)
			wantEnv := map[string]string{"REAPER_KUBERNETES_ENABLED": "true", "REAPER_KUBERNETES_NAMESPACE": tc.wantNamespace}
			if s, ok := tc.kube["selector"].(string); ok {
				wantEnv["REAPER_KUBERNETES_SELECTOR"] = s
				wantEnv["REAPER_KUBERNETES_CONTAINER"] = tc.kube["container"].(string)
			}
			for name, value := range wantEnv {
				if got := envValue(c, name); got != value {
					t.Errorf("env %s=%q, want %q", name, got, value)
				}
			}
			for name, path := range map[string]string{"POD_NAME": "metadata.name", "POD_NAMESPACE": "metadata.namespace", "POD_UID": "metadata.uid"} {
				i := slices.IndexFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == name })
				if i < 0 || c.Env[i].ValueFrom == nil || c.Env[i].ValueFrom.FieldRef == nil || c.Env[i].ValueFrom.FieldRef.FieldPath != path {
					t.Errorf("env %s is not the downward API's %s", name, path)
				}
			}
		})
	}

	m := render(t, withDSNs(nil))
	if len(m.roles)+len(m.roleBindings) != 0 {
		t.Errorf("kubernetes.enabled false rendered %q", m.kinds())
	}
	if c := reaperContainer(t, podOf(t, m).Spec); envValue(c, "REAPER_KUBERNETES_ENABLED") != "false" {
		t.Error("kubernetes.enabled false does not tell the reaper so")
	}
	_, err := renderChart(loadChart(t), map[string]any{"mode": "sidecar", "existingSecret": "x", "kubernetes": map[string]any{"enabled": true}})
	if err == nil || !strings.Contains(err.Error(), "worker pod's service account") {
		t.Errorf("kubernetes.enabled in sidecar mode: want an error about the worker pod's service account, got %v", err)
	}
}

// TestSidecarNeedsKubernetes129 renders sidecar mode for clusters below and
// at 1.29, through the chart and through the named template a parent chart
// includes.
func TestSidecarNeedsKubernetes129(t *testing.T) {
	t.Parallel()
	vals := map[string]any{"mode": "sidecar", "existingSecret": "pulp-dsn"}
	for _, v := range []struct {
		version, minor string
		ok             bool
	}{{"v1.28.9", "28", false}, {"v1.29.0", "29", true}, {"v1.31.2-eks-1", "31", true}} {
		for _, withPod := range []bool{false, true} {
			ch := loadChart(t)
			if withPod {
				ch.Templates = append(ch.Templates, &chart.File{Name: "templates/test-worker-pod.yaml", Data: []byte(workerPodTemplate("."))})
			}
			_, err := renderChartFor(ch, vals, chartutil.KubeVersion{Version: v.version, Major: "1", Minor: v.minor})
			switch {
			case v.ok && err != nil:
				t.Errorf("Kubernetes %s: %v", v.version, err)
			case !v.ok && (err == nil || !strings.Contains(err.Error(), "Kubernetes 1.29 or later")):
				t.Errorf("Kubernetes %s: want an error saying native sidecars need 1.29, got %v", v.version, err)
			}
		}
	}
	// The other modes render on 1.25, the chart's oldest.
	if _, err := renderChartFor(loadChart(t), withDSNs(map[string]any{"mode": "deployment"}), chartutil.KubeVersion{Version: "v1.25.0", Major: "1", Minor: "25"}); err != nil {
		t.Errorf("deployment on 1.25: %v", err)
	}
}

func TestPodMonitor(t *testing.T) {
	t.Parallel()
	selector := map[string]any{"app.kubernetes.io/component": "worker"}
	m := render(t, map[string]any{"mode": "sidecar", "existingSecret": "pulp-dsn",
		"podMonitor": map[string]any{"enabled": true, "selector": selector, "labels": map[string]any{"release": "prom"}}})
	pm := m.podMonitors[0]
	if pm.Labels["release"] != "prom" || pm.Spec.Selector.MatchLabels["app.kubernetes.io/component"] != "worker" {
		t.Errorf("PodMonitor %s lacks podMonitor.labels or selector", toJSON(pm))
	}
	// It scrapes the port the sidecar template names.
	ch := loadChart(t)
	ch.Templates = append(ch.Templates, &chart.File{Name: "templates/test-sidecar.yaml", Data: []byte(`{{ include "lock-reaper.sidecar" . }}`)})
	rendered, err := renderChart(ch, map[string]any{"mode": "sidecar", "existingSecret": "pulp-dsn"})
	if err != nil {
		t.Fatal(err)
	}
	sidecar := strictDecode[corev1.Container](t, "sidecar", rendered["lock-reaper/templates/test-sidecar.yaml"])
	if len(pm.Spec.PodMetricsEndpoints) != 1 || pm.Spec.PodMetricsEndpoints[0].Port != sidecar.Ports[0].Name || pm.Spec.PodMetricsEndpoints[0].Path != "/metrics" {
		t.Errorf("PodMonitor endpoints %s, want /metrics on the sidecar's port %s", toJSON(pm.Spec.PodMetricsEndpoints), sidecar.Ports[0].Name)
	}

	for _, tc := range []struct {
		vals map[string]any
		want string
	}{
		{map[string]any{"mode": "sidecar", "existingSecret": "x", "podMonitor": map[string]any{"enabled": true}}, "podMonitor.selector"},
		{withDSNs(map[string]any{"mode": "deployment", "podMonitor": map[string]any{"enabled": true, "selector": selector}}), "needs mode: sidecar"},
	} {
		if _, err := renderChart(loadChart(t), tc.vals); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: want an error saying %q, got %v", toJSON(tc.vals), tc.want, err)
		}
	}
}

// TestSecretRotation: a Deployment rolls when a DSN given to the chart
// changes (checksum/secret), and has no checksum of a Secret the chart does
// not manage, which therefore needs a restart after rotation (docs/kubernetes.md).
func TestSecretRotation(t *testing.T) {
	t.Parallel()
	sum := func(vals map[string]any) (string, bool) {
		t.Helper()
		s, ok := podOf(t, render(t, vals)).Annotations["checksum/secret"]
		return s, ok
	}
	base, ok := sum(withDSNs(map[string]any{"mode": "deployment"}))
	if !ok {
		t.Fatal("no checksum/secret with the chart-made Secret")
	}
	rotated, _ := sum(withDSNs(map[string]any{"mode": "deployment", "databaseUrl": "postgres://reaper:rotated@db.pulp.svc:5432/pulp"}))
	if rotated == base {
		t.Error("checksum/secret did not change with the database password")
	}
	for _, vals := range []map[string]any{
		{"mode": "deployment", "existingSecret": "pulp-dsn"},
		{"mode": "deployment", "pulp": map[string]any{"cr": "galaxy"}},
	} {
		if _, ok := sum(vals); ok {
			t.Errorf("%s: checksum/secret of a Secret the chart does not manage", toJSON(vals))
		}
	}
}
