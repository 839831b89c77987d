package deploy

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// binaryPath is the image's ENTRYPOINT, which `kubectl exec` must name.
const binaryPath = "/lock-reaper"

// TestNotesIncidentCommands checks that the release notes give, for each
// mode, a command for audit, explain, locks and release that runs in the
// release's own workload, with its configuration and secrets.
func TestNotesIncidentCommands(t *testing.T) {
	t.Parallel()
	dockerfile, err := os.ReadFile(filepath.Join(repoRoot, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(dockerfile), `ENTRYPOINT ["`+binaryPath+`"]`) {
		t.Fatalf("the Dockerfile's ENTRYPOINT is not %s, which the notes' kubectl exec commands name", binaryPath)
	}
	commands := []string{"audit", "explain TASK", "locks --by-owner", "release --owner 1@pulp-worker-OWNER"}

	t.Run("cronjob", func(t *testing.T) {
		t.Parallel()
		m := render(t, withDSNs(nil))
		// jq replaces the arguments of the first container of the Job
		// template: that must be the reaper, running `once`.
		c := m.cronJobs[0].Spec.JobTemplate.Spec.Template.Spec.Containers[0]
		if c.Name != "lock-reaper" || !slices.Equal(c.Args, []string{"once"}) {
			t.Errorf("the Job template's first container is %s %q, want lock-reaper [once]", c.Name, c.Args)
		}
		for _, cmd := range commands {
			args := `"` + strings.Join(strings.Fields(cmd), `", "`) + `"`
			for _, want := range []string{
				"kubectl -n " + namespace + " create job --from=cronjob/" + fullname + " " + fullname + "-" + strings.Fields(cmd)[0] + " --dry-run=client -o json",
				"jq '.spec.template.spec.containers[0].args = [" + args,
				"kubectl -n " + namespace + " logs -f job/" + fullname + "-" + strings.Fields(cmd)[0],
			} {
				if !strings.Contains(m.notes, want) {
					t.Errorf("NOTES.txt lacks %q", want)
				}
			}
		}
		if !strings.Contains(m.notes, `"--yes"`) {
			t.Error("NOTES.txt's release in a Job lacks --yes (a Job has no terminal)")
		}
	})
	t.Run("deployment", func(t *testing.T) {
		t.Parallel()
		m := render(t, map[string]any{"mode": "deployment", "existingSecret": "pulp-dsn"})
		if n := len(m.deployments[0].Spec.Template.Spec.Containers); n != 1 {
			t.Fatalf("the Deployment has %d containers; kubectl exec deploy/ picks the first", n)
		}
		for _, cmd := range commands {
			if want := "deploy/" + fullname + " -- " + binaryPath + " " + cmd; !strings.Contains(m.notes, want) {
				t.Errorf("NOTES.txt lacks %q", want)
			}
		}
		if !strings.Contains(m.notes, "rollout restart deploy/"+fullname) {
			t.Error("NOTES.txt with existingSecret does not say to restart the daemon after a rotation")
		}
	})
	t.Run("sidecar", func(t *testing.T) {
		t.Parallel()
		m := render(t, map[string]any{"mode": "sidecar", "existingSecret": "pulp-dsn"})
		for _, cmd := range commands {
			if want := "WORKER_POD -c lock-reaper -- " + binaryPath + " " + cmd; !strings.Contains(m.notes, want) {
				t.Errorf("NOTES.txt lacks %q", want)
			}
		}
	})
}

// TestNotesKubectlRun: in cronjob mode the notes give the runbook's
// commands as `kubectl run --overrides`, which needs no jq: a pod with the
// CronJob's image, environment, volumes, service account and
// securityContext, whose one container is named as the pod (kubectl run -i
// attaches to it) and runs the command with a text report.
func TestNotesKubectlRun(t *testing.T) {
	t.Parallel()
	for _, vals := range []map[string]any{withDSNs(nil), {"pulp": map[string]any{"cr": "galaxy"}}} {
		m := render(t, vals)
		job := m.cronJobs[0].Spec.JobTemplate.Spec.Template.Spec
		want := map[string][]string{
			"explain":         {"explain", "TASK", "--output", "text"},
			"locks":           {"locks", "--by-owner", "--output", "text"},
			"release-dry-run": {"release", "--owner", "1@pulp-worker-OWNER", "--dry-run", "--output", "text"},
			"release":         {"release", "--owner", "1@pulp-worker-OWNER", "--yes", "--output", "text"},
			"once-force":      {"once", "--force", "--output", "text"},
		}
		line := regexp.MustCompile(`(?m)^  kubectl -n ` + namespace + ` run (\S+) --rm -i --restart=Never --image=(\S+) --overrides='([^']*)'$`)
		found := line.FindAllStringSubmatch(m.notes, -1)
		if len(found) != len(want) {
			t.Fatalf("NOTES.txt has %d kubectl run commands, want %d:\n%s", len(found), len(want), m.notes)
		}
		for _, f := range found {
			name, image, overrides := f[1], f[2], f[3]
			var pod struct {
				APIVersion string         `json:"apiVersion"`
				Spec       corev1.PodSpec `json:"spec"`
			}
			dec := json.NewDecoder(strings.NewReader(overrides))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&pod); err != nil {
				t.Fatalf("%s: --overrides is not a pod: %v", name, err)
			}
			cmd, _ := strings.CutPrefix(name, fullname+"-")
			args, ok := want[cmd]
			if !ok {
				t.Errorf("unexpected kubectl run %s", name)
				continue
			}
			if pod.APIVersion != "v1" || len(pod.Spec.Containers) != 1 {
				t.Fatalf("%s: apiVersion %q, %d containers; want v1 and one container", name, pod.APIVersion, len(pod.Spec.Containers))
			}
			c, jc := pod.Spec.Containers[0], job.Containers[0]
			if c.Name != name || !slices.Equal(c.Args, args) {
				t.Errorf("%s: container %s args %q, want %s %q", name, c.Name, c.Args, name, args)
			}
			if c.Image != jc.Image || image != jc.Image {
				t.Errorf("%s: image %s / %s, want the CronJob's %s", name, image, c.Image, jc.Image)
			}
			if !reflect.DeepEqual(c.Env, jc.Env) || !reflect.DeepEqual(c.VolumeMounts, jc.VolumeMounts) || !reflect.DeepEqual(c.SecurityContext, jc.SecurityContext) {
				t.Errorf("%s: env, mounts or securityContext differ from the CronJob's container", name)
			}
			if !reflect.DeepEqual(pod.Spec.Volumes, job.Volumes) || pod.Spec.ServiceAccountName != job.ServiceAccountName ||
				!reflect.DeepEqual(pod.Spec.SecurityContext, job.SecurityContext) || !reflect.DeepEqual(pod.Spec.AutomountServiceAccountToken, job.AutomountServiceAccountToken) {
				t.Errorf("%s: volumes, service account or securityContext differ from the CronJob's pod", name)
			}
			if pod.Spec.RestartPolicy != corev1.RestartPolicyNever {
				t.Errorf("%s: restartPolicy %q, want Never", name, pod.Spec.RestartPolicy)
			}
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
