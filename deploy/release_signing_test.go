package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestReleaseWorkflowSignsEveryFileItPublishes: the signing step and the
// GitHub release step, run as the runner runs them with cosign and gh
// replaced by stand-ins that record their arguments, sign every file the
// release carries (each binary, SHA256SUMS, the chart's archive, the SBOM)
// with a keyless Sigstore bundle, and upload each file's bundle under the
// name docs/security.md tells users to download: <file>.sigstore.json.
func TestReleaseWorkflowSignsEveryFileItPublishes(t *testing.T) {
	t.Parallel()
	w := readWorkflow(t, "release.yml")
	sign := w.step(t, func(s workflowStep) bool { return strings.Contains(s.Run, "cosign sign-blob") }, "run cosign sign-blob")
	release := w.step(t, func(s workflowStep) bool { return strings.Contains(s.Run, "gh release create") }, "run gh release create")
	if !slices.ContainsFunc(w.steps(), func(s workflowStep) bool { return strings.HasPrefix(s.Uses, "sigstore/cosign-installer@") }) {
		t.Error("release.yml installs no cosign")
	}

	// What the earlier steps leave behind, by the names they give it.
	const version = "1.2.3"
	work := t.TempDir()
	published := []string{
		"dist/lock-reaper_1.2.3_linux_amd64", "dist/lock-reaper_1.2.3_linux_arm64",
		"dist/lock-reaper_1.2.3_darwin_arm64", "dist/lock-reaper-1.2.3.tgz",
		"dist/SHA256SUMS", "lock-reaper.spdx.json",
	}
	for _, f := range published {
		if err := os.MkdirAll(filepath.Join(work, filepath.Dir(f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(work, f), []byte(f), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// The stand-ins: cosign writes the bundle it is asked for; both log
	// their arguments, one per line, a call after a line "--".
	bin := t.TempDir()
	log := filepath.Join(t.TempDir(), "calls")
	stub := `#!/bin/sh
{ echo "$(basename "$0")"; for a in "$@"; do echo "$a"; done; echo --; } >>"$CALLS"
if [ "$(basename "$0")" = cosign ] && [ "$1" = sign-blob ]; then
  while [ "$#" -gt 1 ]; do
    if [ "$1" = --bundle ]; then echo bundle >"$2"; fi
    shift
  done
fi
`
	for _, name := range []string{"cosign", "gh"} {
		if err := os.WriteFile(filepath.Join(bin, name), []byte(stub), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range []workflowStep{sign, release} {
		cmd := exec.Command("bash", "-e", "-o", "pipefail", "-c", s.Run)
		cmd.Dir = work
		cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), "CALLS="+log,
			"VERSION="+version, "GITHUB_REF_NAME=v"+version)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("the step %q: %v\n%s", s.Name, err, out)
		}
	}
	if sign.Env["VERSION"] != "${{ steps.version.outputs.version }}" {
		t.Errorf("the signing step's VERSION is %q, want the tag's version", sign.Env["VERSION"])
	}

	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	signed := map[string]string{} // file -> bundle
	var uploaded []string
	for _, call := range strings.Split(strings.TrimSuffix(string(b), "--\n"), "--\n") {
		args := strings.Split(strings.TrimSuffix(call, "\n"), "\n")
		switch {
		case args[0] == "cosign" && args[1] == "sign-blob":
			if !slices.Contains(args, "--yes") {
				t.Errorf("cosign %q would ask for a confirmation no one gives", args[1:])
			}
			i := slices.Index(args, "--bundle")
			if i < 0 || i+1 >= len(args) {
				t.Errorf("cosign %q writes no bundle", args[1:])
				continue
			}
			signed[args[len(args)-1]] = args[i+1]
		case args[0] == "gh" && len(args) > 2 && args[1] == "release" && args[2] == "create":
			for _, a := range args[3:] {
				if _, err := os.Stat(filepath.Join(work, a)); err == nil {
					uploaded = append(uploaded, a)
				}
			}
		default:
			t.Errorf("an unexpected call: %q", args)
		}
	}

	for _, f := range published {
		bundle, ok := signed[f]
		if !ok {
			t.Errorf("%s is published unsigned", f)
			continue
		}
		if filepath.Base(bundle) != filepath.Base(f)+".sigstore.json" {
			t.Errorf("%s's bundle is %s, want %s.sigstore.json (docs/security.md)", f, bundle, filepath.Base(f))
		}
		for _, want := range []string{f, bundle} {
			if !slices.Contains(uploaded, want) {
				t.Errorf("the GitHub release does not carry %s; it uploads %q", want, uploaded)
			}
		}
	}
	names := map[string]bool{}
	for _, f := range uploaded {
		if names[filepath.Base(f)] {
			t.Errorf("the GitHub release uploads %s twice: %q", filepath.Base(f), uploaded)
		}
		names[filepath.Base(f)] = true
		if !strings.HasSuffix(f, ".sigstore.json") && signed[f] == "" {
			t.Errorf("the GitHub release carries %s unsigned", f)
		}
	}
}

// TestVerifyReleaseDocMatchesWorkflow: the commands of docs/security.md's
// "Verify a release" check what the workflow signs, under the identity its
// signatures carry: the workflow's path in the repository the chart names,
// at a release tag's ref, issued to GitHub Actions; the image and chart
// repositories it pushes to; the SBOM's predicate type as it attests it.
func TestVerifyReleaseDocMatchesWorkflow(t *testing.T) {
	t.Parallel()
	w := readWorkflow(t, "release.yml")
	b, err := os.ReadFile(filepath.Join(repoRoot, "docs", "security.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## Verify a release\n")
	if !ok {
		t.Fatal(`docs/security.md has no section "## Verify a release"`)
	}
	section, _, _ = strings.Cut(section, "\n## ")

	sources := loadChart(t).Metadata.Sources
	if len(sources) == 0 {
		t.Fatal("Chart.yaml names no source repository")
	}
	attest := regexp.MustCompile(`cosign attest .*--type (\S+)`).FindStringSubmatch(w.step(t, func(s workflowStep) bool {
		return strings.Contains(s.Run, "cosign attest")
	}, "attest the SBOM").Run)
	if attest == nil {
		t.Fatal("release.yml attests no SBOM with cosign attest --type")
	}
	for _, want := range []string{
		sources[0] + "/.github/workflows/release.yml@refs/tags/v",
		"https://token.actions.githubusercontent.com",
		"cosign verify ",
		w.Env["IMAGE"] + ":",
		strings.TrimPrefix(w.Env["CHARTS"], "oci://") + "/lock-reaper:",
		"cosign verify-attestation --type " + attest[1],
		"cosign verify-blob",
		"SHA256SUMS.sigstore.json",
	} {
		if !strings.Contains(section, want) {
			t.Errorf("docs/security.md's Verify a release lacks %q", want)
		}
	}
}
