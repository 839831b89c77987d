package deploy

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// binaryPath is the image's ENTRYPOINT, which `kubectl exec` must name.
const binaryPath = "/lock-reaper"

// The notes Helm prints on every install and upgrade fit a screen: at most
// notesMaxLines lines, none wider than notesMaxWidth columns. The long
// commands are in docs/kubernetes.md, which the notes link.
const (
	notesMaxLines = 30
	notesMaxWidth = 200
)

// renderNotesIn renders the chart's notes for a release in namespace ns.
func renderNotesIn(t *testing.T, ns string, vals map[string]any) string {
	t.Helper()
	ch := loadChart(t)
	caps := chartutil.DefaultCapabilities.Copy()
	caps.KubeVersion = kubeVersion
	top, err := chartutil.ToRenderValues(ch, vals, chartutil.ReleaseOptions{Name: releaseName, Namespace: ns, Revision: 1, IsInstall: true}, caps)
	if err != nil {
		t.Fatal(err)
	}
	rendered, err := engine.Engine{Strict: true}.Render(ch, top)
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	return rendered["lock-reaper/templates/NOTES.txt"]
}

// notesCases are the values whose combinations change the notes: each mode
// with every option the notes speak of, at once and alone, and with names at
// their longest (a namespace and the full name are DNS labels; pulp-operator
// names a Service <cr>-redis-svc, a DNS label too, which bounds the CR's).
func notesCases() map[string]map[string]any {
	long := strings.Repeat("n", 63)
	return map[string]map[string]any{
		"cronjob": withDSNs(map[string]any{"config": map[string]any{"output": "json"}, "cronjob": map[string]any{"schedule": "*/10 * * * *"}}),
		"cronjob, pulp.cr, pushgateway, kubernetes": {"pulp": map[string]any{"cr": strings.Repeat("c", 53)}, "fullnameOverride": long,
			"config": map[string]any{"output": "json", "pushgateway_url": "http://pushgateway.monitoring:9091"}, "prometheusRule": map[string]any{"enabled": true}},
		"deployment, everything": {"mode": "deployment", "pulp": map[string]any{"cr": strings.Repeat("c", 53)}, "fullnameOverride": long,
			"config": map[string]any{"output": "json"}, "prometheusRule": map[string]any{"enabled": true}, "metrics": map[string]any{"port": 80},
			"networkPolicy": map[string]any{"enabled": true}, "kubernetes": map[string]any{"enabled": true}},
		"deployment, monitored": withDSNs(map[string]any{"mode": "deployment", "fullnameOverride": long, "serviceMonitor": map[string]any{"enabled": true},
			"networkPolicy": map[string]any{"enabled": true, "from": []any{prometheusPeer}}, "prometheusRule": map[string]any{"enabled": true}}),
		"deployment, existingSecret, no page": {"mode": "deployment", "existingSecret": "pulp-dsn", "fullnameOverride": long,
			"config": map[string]any{"status_page": false, "output": "json"}, "prometheusRule": map[string]any{"enabled": true}},
		"deployment": withDSNs(map[string]any{"mode": "deployment"}),
		"sidecar, everything": {"mode": "sidecar", "existingSecret": "pulp-dsn", "fullnameOverride": long, "metrics": map[string]any{"port": 9464},
			"config": map[string]any{"output": "json"}, "prometheusRule": map[string]any{"enabled": true},
			"extraVolumes": []any{map[string]any{"name": "ca", "configMap": map[string]any{"name": "pulp-ca"}}}},
		"sidecar, monitored, no page": withDSNs(map[string]any{"mode": "sidecar", "config": map[string]any{"status_page": false},
			"podMonitor": map[string]any{"enabled": true, "selector": map[string]any{"app.kubernetes.io/component": "worker"}}, "prometheusRule": map[string]any{"enabled": true}}),
		"sidecar": withDSNs(map[string]any{"mode": "sidecar"}),
	}
}

// TestNotesFitAScreen renders the notes of every case, in a short and in the
// longest namespace, and holds them to notesMaxLines and notesMaxWidth.
func TestNotesFitAScreen(t *testing.T) {
	t.Parallel()
	for name, vals := range notesCases() {
		for _, ns := range []string{namespace, strings.Repeat("s", 63)} {
			notes := renderNotesIn(t, ns, vals)
			lines := strings.Split(strings.TrimRight(notes, "\n"), "\n")
			if len(lines) > notesMaxLines {
				t.Errorf("%s, namespace of %d: %d lines, want at most %d:\n%s", name, len(ns), len(lines), notesMaxLines, notes)
			}
			for i, l := range lines {
				if w := utf8.RuneCountInString(l); w > notesMaxWidth {
					t.Errorf("%s, namespace of %d: line %d is %d columns, want at most %d:\n%s", name, len(ns), i+1, w, notesMaxWidth, l)
				}
				if strings.Contains(l, "\t") || strings.TrimRight(l, " ") != l {
					t.Errorf("%s: line %d has a tab or trailing spaces: %q", name, i+1, l)
				}
			}
			if strings.Contains(notes, "<no value>") {
				t.Errorf("%s: the notes print <no value>:\n%s", name, notes)
			}
		}
	}
}

// TestNotesStatusPage: the daemon's notes say how to open its status page
// (port-forward to the page's port, then the local address), in the
// Deployment and in a worker pod's sidecar, and say that it is off when
// config.status_page is false.
func TestNotesStatusPage(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name          string
		vals          map[string]any
		target        string
		local, remote int
	}{
		{"deployment", withDSNs(map[string]any{"mode": "deployment"}), "deploy/" + fullname, 9090, 9090},
		{"deployment on another port", withDSNs(map[string]any{"mode": "deployment", "metrics": map[string]any{"port": 8443}}), "deploy/" + fullname, 8443, 8443},
		// A privileged local port would need root on the engineer's machine.
		{"deployment on a privileged port", withDSNs(map[string]any{"mode": "deployment", "metrics": map[string]any{"port": 80}}), "deploy/" + fullname, 9090, 80},
		{"sidecar", withDSNs(map[string]any{"mode": "sidecar", "metrics": map[string]any{"port": 9464}}), "pod/WORKER_POD", 9464, 9464},
	} {
		notes := render(t, tc.vals).notes
		forward := fmt.Sprintf("kubectl -n %s port-forward %s %d:%d\n", namespace, tc.target, tc.local, tc.remote)
		open := fmt.Sprintf("open http://127.0.0.1:%d/\n", tc.local)
		if !strings.Contains(notes, forward) || !strings.Contains(notes, open) {
			t.Errorf("%s: the notes lack %q or %q:\n%s", tc.name, forward, open, notes)
		}
		if strings.Contains(notes, "status page is off") {
			t.Errorf("%s: the notes say the page is off", tc.name)
		}

		off := maps.Clone(tc.vals)
		off["config"] = map[string]any{"status_page": false}
		notes = render(t, off).notes
		if strings.Contains(notes, "open http") || !strings.Contains(notes, "status page is off") || !strings.Contains(notes, forward) {
			t.Errorf("%s with config.status_page false: want the page said off and /metrics still forwarded:\n%s", tc.name, notes)
		}
	}
	// In the Deployment, the notes say who else can read the page.
	open := render(t, withDSNs(map[string]any{"mode": "deployment"})).notes
	if !strings.Contains(open, "every pod in the cluster") || !strings.Contains(open, "networkPolicy.enabled") {
		t.Errorf("without networkPolicy the notes do not say that every pod can read the page:\n%s", open)
	}
	closed := render(t, withDSNs(map[string]any{"mode": "deployment", "networkPolicy": map[string]any{"enabled": true}})).notes
	if strings.Contains(closed, "every pod in the cluster") || !strings.Contains(closed, "NetworkPolicy admits") {
		t.Errorf("with networkPolicy the notes do not say the policy restricts the page:\n%s", closed)
	}
	if cron := render(t, withDSNs(nil)).notes; strings.Contains(cron, "port-forward") {
		t.Errorf("a CronJob serves no page, yet its notes port-forward:\n%s", cron)
	}
}

// TestNotesIncidentCommands checks that the notes give, for each mode, the
// short commands that run in the release's own workload with its
// configuration and secrets, and link the section of docs/kubernetes.md
// that holds the long ones (a Job made from the CronJob, release, once
// --force), at the tag a release of the chart's appVersion publishes.
func TestNotesIncidentCommands(t *testing.T) {
	t.Parallel()
	dockerfile, err := os.ReadFile(filepath.Join(repoRoot, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(dockerfile), `ENTRYPOINT ["`+binaryPath+`"]`) {
		t.Fatalf("the Dockerfile's ENTRYPOINT is not %s, which the notes' kubectl exec commands name", binaryPath)
	}
	ch := loadChart(t)
	link := ch.Metadata.Sources[0] + "/blob/v" + ch.Metadata.AppVersion + "/docs/kubernetes.md#incident-work-in-the-cluster"
	if ch.Metadata.Sources[0] != "https://github.com/lock-reaper/lock-reaper" {
		t.Errorf("the chart's first source %q is not the project's repository, which the notes link", ch.Metadata.Sources[0])
	}
	workflow, err := os.ReadFile(filepath.Join(repoRoot, ".github", "workflows", "release.yml"))
	if err != nil || !strings.Contains(string(workflow), `- "v*"`) {
		t.Errorf("the release workflow does not run on v* tags, the form of the notes' link (%v)", err)
	}
	doc, err := os.ReadFile(filepath.Join(repoRoot, "docs", "kubernetes.md"))
	if err != nil {
		t.Fatal(err)
	}
	section, ok := strings.CutPrefix(string(doc[strings.Index(string(doc), "\n## Incident work in the cluster\n")+1:]), "## Incident work in the cluster\n")
	if !ok {
		t.Fatal("docs/kubernetes.md has no section \"Incident work in the cluster\", which the notes link")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	for _, want := range []string{
		"create job pulp-reaper-lock-reaper-explain --from=cronjob/pulp-reaper-lock-reaper",
		`jq '.spec.template.spec.containers[0].args = ["explain", "TASK", "--output", "text"]'`,
		`["release", "--owner", "OWNER", "--yes", "--output", "text"]`,
		`["once", "--force", "--output", "text"]`,
		"exec deploy/pulp-reaper-lock-reaper -- " + binaryPath + " once --force --output text",
		"exec -it deploy/pulp-reaper-lock-reaper -- " + binaryPath + " release --owner OWNER --dry-run",
	} {
		if !strings.Contains(section, want) {
			t.Errorf("docs/kubernetes.md's \"Incident work in the cluster\" lacks %q", want)
		}
	}

	cron := render(t, withDSNs(nil))
	c := cron.cronJobs[0].Spec.JobTemplate.Spec.Template.Spec.Containers[0]
	// The docs' jq replaces the arguments of the first container of the Job
	// template: that must be the reaper, running `once`.
	if c.Name != "lock-reaper" || !slices.Equal(c.Args, []string{"once"}) {
		t.Errorf("the Job template's first container is %s %q, want lock-reaper [once]", c.Name, c.Args)
	}
	for _, want := range []string{
		"kubectl -n " + namespace + " create job " + fullname + "-manual \\\n    --from=cronjob/" + fullname + "\n",
		"kubectl -n " + namespace + " logs -f job/" + fullname + "-manual --pod-running-timeout=2m\n",
		link + "\n",
	} {
		if !strings.Contains(cron.notes, want) {
			t.Errorf("cronjob: the notes lack %q:\n%s", want, cron.notes)
		}
	}

	commands := []string{"audit", "explain TASK", "locks --by-owner"}
	m := render(t, map[string]any{"mode": "deployment", "existingSecret": "pulp-dsn"})
	if n := len(m.deployments[0].Spec.Template.Spec.Containers); n != 1 {
		t.Fatalf("the Deployment has %d containers; kubectl exec deploy/ picks the first", n)
	}
	for _, cmd := range commands {
		if want := "kubectl -n " + namespace + " exec deploy/" + fullname + " -- " + binaryPath + " " + cmd + " --output text\n"; !strings.Contains(m.notes, want) {
			t.Errorf("deployment: the notes lack %q", want)
		}
	}
	if !strings.Contains(m.notes, "rollout restart deploy/"+fullname) || !strings.Contains(m.notes, link+"\n") {
		t.Errorf("deployment with existingSecret: the notes lack the restart after a rotation or the link:\n%s", m.notes)
	}
	m = render(t, map[string]any{"mode": "sidecar", "existingSecret": "pulp-dsn"})
	for _, cmd := range commands {
		if want := "exec WORKER_POD -c lock-reaper -- " + binaryPath + " " + cmd + " --output text\n"; !strings.Contains(m.notes, want) {
			t.Errorf("sidecar: the notes lack %q", want)
		}
	}
	if !strings.Contains(m.notes, link+"\n") {
		t.Errorf("sidecar: the notes lack the link %s", link)
	}
}

// TestSidecarPatch: in sidecar mode the ConfigMap holds, beside the
// configuration, a strategic merge patch of a worker Deployment that adds
// exactly what the named templates render (the sidecar, its volume and
// extraVolumes), and the notes print the commands that apply it. The patch
// is not mounted: the volume projects config.yaml only.
func TestSidecarPatch(t *testing.T) {
	t.Parallel()
	extra := map[string]any{"name": "pulp-ca", "configMap": map[string]any{"name": "pulp-ca"}}
	vals := map[string]any{"mode": "sidecar", "existingSecret": "pulp-dsn", "extraVolumes": []any{extra}}
	ch := loadChart(t)
	ch.Templates = append(ch.Templates, &chart.File{Name: "templates/test-worker-pod.yaml", Data: []byte(workerPodTemplate("."))})
	rendered, err := renderChart(ch, vals)
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	want := strictDecode[corev1.Pod](t, "worker pod", rendered["lock-reaper/templates/test-worker-pod.yaml"]).Spec
	delete(rendered, "lock-reaper/templates/test-worker-pod.yaml")
	m := decodeRendered(t, rendered)

	raw, ok := m.configMaps[0].Data["sidecar-patch.yaml"]
	if !ok {
		t.Fatalf("the ConfigMap lacks sidecar-patch.yaml: %s", toJSON(m.configMaps[0].Data))
	}
	patch := strictDecode[appsv1.Deployment](t, "sidecar-patch.yaml", raw).Spec.Template.Spec
	if len(patch.InitContainers) != 1 || !reflect.DeepEqual(patch.InitContainers[0], want.InitContainers[0]) {
		t.Errorf("the patch's init containers differ from lock-reaper.sidecar:\npatch: %s\nwant:  %s", toJSON(patch.InitContainers), toJSON(want.InitContainers))
	}
	checkSidecar(t, patch.InitContainers[0])
	if len(patch.Volumes) != 2 || !reflect.DeepEqual(patch.Volumes[0], want.Volumes[0]) || patch.Volumes[1].Name != "pulp-ca" {
		t.Errorf("the patch's volumes %s, want lock-reaper.sidecarVolume and extraVolumes", toJSON(patch.Volumes))
	}
	if len(patch.Containers) != 0 {
		t.Errorf("the patch touches the worker's containers: %s", toJSON(patch.Containers))
	}
	for _, v := range want.Volumes {
		if v.Projected == nil {
			continue
		}
		for _, src := range v.Projected.Sources {
			if src.ConfigMap != nil && (len(src.ConfigMap.Items) != 1 || src.ConfigMap.Items[0].Key != "config.yaml") {
				t.Errorf("the sidecar's volume projects %s of the ConfigMap, want config.yaml alone", toJSON(src.ConfigMap.Items))
			}
		}
	}
	for _, want := range []string{
		"kubectl -n " + namespace + " get configmap " + fullname + " \\\n    -o jsonpath='{.data.sidecar-patch\\.yaml}' > lock-reaper-sidecar.yaml\n",
		"kubectl -n " + namespace + " patch deployment WORKER_DEPLOYMENT --patch-file lock-reaper-sidecar.yaml\n",
	} {
		if !strings.Contains(m.notes, want) {
			t.Errorf("the notes lack %q:\n%s", want, m.notes)
		}
	}
	for _, mode := range []string{"cronjob", "deployment"} {
		if m := render(t, withDSNs(map[string]any{"mode": mode})); len(m.configMaps[0].Data) != 1 {
			t.Errorf("%s: the ConfigMap holds %d keys, want config.yaml alone", mode, len(m.configMaps[0].Data))
		}
	}
}

// TestReportsStayText: no example prints a JSON report in the pod's log (a
// one-line report of a large incident is split by container runtimes above
// 16 KiB), and the notes warn about config.output json.
func TestReportsStayText(t *testing.T) {
	t.Parallel()
	for _, file := range exampleFiles(t) {
		vals := readValuesFile(t, file)
		cfg, _ := vals["config"].(map[string]any)
		if out, ok := cfg["output"]; ok && out != "text" {
			t.Errorf("%s: config.output %v; the report belongs in text in a pod's log", file, out)
		}
	}
	for _, out := range []string{"json"} {
		m := render(t, withDSNs(map[string]any{"config": map[string]any{"output": out}}))
		if !strings.Contains(m.notes, "WARNING: config.output "+out) {
			t.Errorf("NOTES do not warn about config.output %s:\n%s", out, m.notes)
		}
	}
	if m := render(t, withDSNs(map[string]any{"config": map[string]any{"output": "text", "log": map[string]any{"format": "json"}}})); strings.Contains(m.notes, "WARNING") {
		t.Errorf("NOTES warn about output: text with log.format: json:\n%s", m.notes)
	}
}
