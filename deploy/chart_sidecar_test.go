package deploy

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"testing"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// TestSidecarTemplate renders the lock-reaper.sidecar named template through
// a template added to the loaded chart for the test only, and checks it as a
// native sidecar of a Pulp worker pod.
func TestSidecarTemplate(t *testing.T) {
	t.Parallel()
	ch := loadChart(t)
	ch.Templates = append(ch.Templates,
		&chart.File{Name: "templates/test-sidecar-container.yaml", Data: []byte(`{{ include "lock-reaper.sidecar" . }}`)},
		&chart.File{Name: "templates/test-worker-pod.yaml", Data: []byte(workerPodTemplate("."))},
	)
	rendered, err := renderChart(ch, map[string]any{"mode": "sidecar", "existingSecret": "pulp-dsn"})
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	container := strictDecode[corev1.Container](t, "lock-reaper.sidecar", rendered["lock-reaper/templates/test-sidecar-container.yaml"])
	checkSidecar(t, container)

	pod := strictDecode[corev1.Pod](t, "worker pod", rendered["lock-reaper/templates/test-worker-pod.yaml"])
	if !reflect.DeepEqual(pod.Spec.InitContainers[0], container) {
		t.Error("the sidecar renders differently inside a pod")
	}
	checkFiles(t, pod.Spec, container, "pulp-dsn", "redis-url", "database-url")
	checkRestrictedContainer(t, container)

	delete(rendered, "lock-reaper/templates/test-sidecar-container.yaml")
	delete(rendered, "lock-reaper/templates/test-worker-pod.yaml")
	m := decodeRendered(t, rendered)
	if got := m.kinds(); !slices.Equal(got, []string{"ConfigMap"}) {
		t.Errorf("sidecar mode with existingSecret rendered %q, want only the ConfigMap", got)
	}
	if cfg := configOf(t, m); cfg["listen"] != ":9090" {
		t.Errorf("sidecar config listen %v, want :9090", cfg["listen"])
	}
}

// TestSidecarFromParentChart renders the sidecar the way README.md tells a
// chart that depends on lock-reaper to, and checks that its volume refers to
// the ConfigMap that the dependency creates.
func TestSidecarFromParentChart(t *testing.T) {
	t.Parallel()
	parent := &chart.Chart{
		Metadata: &chart.Metadata{APIVersion: chart.APIVersionV2, Name: "pulp-workers", Version: "1.0.0"},
		Values:   map[string]any{},
		Templates: []*chart.File{
			{Name: "templates/worker.yaml", Data: []byte(workerPodTemplate(`(index .Subcharts "lock-reaper")`))},
		},
	}
	parent.AddDependency(loadChart(t))
	rendered, err := renderChart(parent, map[string]any{
		"lock-reaper": map[string]any{"mode": "sidecar", "existingSecret": "pulp-dsn"},
	})
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	pod := strictDecode[corev1.Pod](t, "worker pod", rendered["pulp-workers/templates/worker.yaml"])
	checkSidecar(t, pod.Spec.InitContainers[0])
	checkFiles(t, pod.Spec, pod.Spec.InitContainers[0], "pulp-dsn", "redis-url", "database-url")

	cm := strictDecode[corev1.ConfigMap](t, "ConfigMap", rendered["pulp-workers/charts/lock-reaper/templates/configmap.yaml"])
	if cm.Name != fullname {
		t.Errorf("the dependency's ConfigMap is %q, the sidecar mounts %q", cm.Name, fullname)
	}
}

// workerPodTemplate is a Pulp worker pod with lock-reaper as a native sidecar,
// the named templates given ctx.
func workerPodTemplate(ctx string) string {
	return `apiVersion: v1
kind: Pod
metadata:
  name: pulp-worker
spec:
  initContainers:
    - {{ include "lock-reaper.sidecar" ` + ctx + ` | indent 6 | trim }}
  containers:
    - name: worker
      image: pulp/pulp-minimal
      args: ["pulpcore-worker"]
  volumes:
    - {{ include "lock-reaper.sidecarVolume" ` + ctx + ` | indent 6 | trim }}
`
}

// checkSidecar checks a container as a native sidecar of a Pulp worker pod:
// it must restart on its own and must never decide the pod's readiness.
func checkSidecar(t *testing.T, c corev1.Container) {
	t.Helper()
	if c.RestartPolicy == nil || *c.RestartPolicy != corev1.ContainerRestartPolicyAlways {
		t.Errorf("sidecar restartPolicy %v, want Always (a native sidecar)", c.RestartPolicy)
	}
	if !slices.Equal(c.Args, []string{"run"}) {
		t.Errorf("sidecar args %q, want [run]", c.Args)
	}
	if c.ReadinessProbe != nil {
		t.Error("sidecar has a readinessProbe: it would take the Pulp worker pod out of Ready whenever Redis or PostgreSQL is down")
	}
	if c.StartupProbe != nil {
		t.Error("sidecar has a startupProbe: the worker would not start until it passed")
	}
	checkHTTPProbe(t, "liveness", c.LivenessProbe, "/livez", "reaper-metrics")
	if len(c.Ports) != 1 || c.Ports[0].Name != "reaper-metrics" {
		t.Errorf("sidecar ports %s, want one named reaper-metrics", toJSON(c.Ports))
	}
}

// TestReadmeSidecarSnippet keeps the sidecar instructions of the chart's
// README.md true: the values shown must validate, and the worker pod patch
// shown must be a valid native sidecar and exactly what the named templates
// render for those values (but for the image tag, which follows appVersion).
func TestReadmeSidecarSnippet(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile(filepath.Join(chartDir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	block := func(marker string) string {
		t.Helper()
		m := regexp.MustCompile("(?s)<!-- " + marker + " -->\\s*```yaml\n(.*?)```").FindSubmatch(readme)
		if m == nil {
			t.Fatalf("README.md has no yaml block after <!-- %s -->", marker)
		}
		return string(m[1])
	}

	vals, err := chartutil.ReadValues([]byte(block("sidecar-values")))
	if err != nil {
		t.Fatalf("README.md sidecar values: %v", err)
	}
	ch := loadChart(t)
	ch.Templates = append(ch.Templates, &chart.File{Name: "templates/test-worker-pod.yaml", Data: []byte(workerPodTemplate("."))})
	rendered, err := renderChart(ch, vals.AsMap())
	if err != nil {
		t.Fatalf("render README.md sidecar values: %v", err)
	}
	want := strictDecode[corev1.Pod](t, "worker pod", rendered["lock-reaper/templates/test-worker-pod.yaml"]).Spec

	d := strictDecode[appsv1.Deployment](t, "README.md worker patch", block("sidecar-pod-patch"))
	pod := d.Spec.Template.Spec
	if len(pod.InitContainers) != 1 || len(pod.Volumes) != 1 {
		t.Fatalf("README.md patch has %d init containers and %d volumes, want the sidecar and its volume", len(pod.InitContainers), len(pod.Volumes))
	}
	checkSidecar(t, pod.InitContainers[0])
	checkRestrictedContainer(t, pod.InitContainers[0])
	checkFiles(t, pod, pod.InitContainers[0], vals["existingSecret"].(string), "redis-url", "database-url")

	got := pod.InitContainers[0]
	got.Image, want.InitContainers[0].Image = "", ""
	if !reflect.DeepEqual(got, want.InitContainers[0]) {
		t.Errorf("README.md sidecar differs from what lock-reaper.sidecar renders for the README's values:\nREADME:   %s\nrendered: %s", toJSON(got), toJSON(want.InitContainers[0]))
	}
	if !reflect.DeepEqual(pod.Volumes[0], want.Volumes[0]) {
		t.Errorf("README.md volume differs from what lock-reaper.sidecarVolume renders:\nREADME:   %s\nrendered: %s", toJSON(pod.Volumes[0]), toJSON(want.Volumes[0]))
	}
}
