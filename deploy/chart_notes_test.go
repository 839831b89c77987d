package deploy

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
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
