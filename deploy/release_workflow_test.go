package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// workflow is the part of a GitHub Actions workflow the tests read.
type workflow struct {
	// On is the workflow's on: key, which sigs.k8s.io/yaml reads as YAML
	// 1.1 does, as the boolean true; GitHub reads it as the string on.
	On struct {
		Push struct {
			Tags []string `json:"tags"`
		} `json:"push"`
	} `json:"true"`
	Env  map[string]string `json:"env"`
	Jobs map[string]struct {
		Steps []workflowStep `json:"steps"`
	} `json:"jobs"`
}

type workflowStep struct {
	ID   string            `json:"id"`
	Name string            `json:"name"`
	Uses string            `json:"uses"`
	Run  string            `json:"run"`
	With map[string]any    `json:"with"`
	Env  map[string]string `json:"env"`
}

func readWorkflow(t *testing.T, name string) workflow {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, ".github", "workflows", name))
	if err != nil {
		t.Fatal(err)
	}
	var w workflow
	if err := yaml.Unmarshal(b, &w); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return w
}

func (w workflow) steps() []workflowStep {
	var all []workflowStep
	for _, j := range w.Jobs {
		all = append(all, j.Steps...)
	}
	return all
}

// step is the one step whose run script contains cmd, or uses action.
func (w workflow) step(t *testing.T, match func(workflowStep) bool, what string) workflowStep {
	t.Helper()
	var found []workflowStep
	for _, s := range w.steps() {
		if match(s) {
			found = append(found, s)
		}
	}
	if len(found) != 1 {
		t.Fatalf("release.yml has %d steps that %s, want 1", len(found), what)
	}
	return found[0]
}

// TestReleaseWorkflowPublishesWhatTheChartPulls: the chart's default image
// is what a tag publishes. The workflow pushes the image to the repository
// values.yaml names, tagged with the tag's version, and packages the chart
// with that version as its version and appVersion, to which the image tag
// defaults; the version is derived from the tag alone.
func TestReleaseWorkflowPublishesWhatTheChartPulls(t *testing.T) {
	t.Parallel()
	w := readWorkflow(t, "release.yml")
	if len(w.On.Push.Tags) != 1 || w.On.Push.Tags[0] != "v*" {
		t.Errorf("release.yml runs on tags %q, want [v*]", w.On.Push.Tags)
	}

	values := readValuesFile(t, "values.yaml")
	repo := values["image"].(map[string]any)["repository"]
	if w.Env["IMAGE"] != repo {
		t.Errorf("release.yml pushes to IMAGE=%q, values.yaml's image.repository is %q", w.Env["IMAGE"], repo)
	}

	// The version step, run as the runner runs it, for a tag.
	version := w.step(t, func(s workflowStep) bool { return s.ID == "version" }, "have id version")
	for tag, want := range map[string]string{"v1.2.3": "1.2.3", "v0.2.0-rc.1": "0.2.0-rc.1", "1.2.3-not-v": "", "vnext": ""} {
		out := filepath.Join(t.TempDir(), "output")
		cmd := exec.Command("bash", "-e", "-o", "pipefail", "-c", version.Run)
		cmd.Env = append(os.Environ(), "GITHUB_REF_NAME="+tag, "GITHUB_OUTPUT="+out)
		stderr, err := cmd.CombinedOutput()
		got, _ := os.ReadFile(out)
		switch {
		case want == "" && err == nil:
			t.Errorf("tag %s: the version step accepts it:\n%s", tag, got)
		case want != "" && err != nil:
			t.Errorf("tag %s: %v\n%s", tag, err, stderr)
		case want != "" && !regexp.MustCompile(`(?m)^version=`+regexp.QuoteMeta(want)+`$`).Match(got):
			t.Errorf("tag %s: the version step's output\n%s\nlacks version=%s", tag, got, want)
		}
	}
	const versionExpr = "${{ steps.version.outputs.version }}"

	image := w.step(t, func(s workflowStep) bool { return strings.HasPrefix(s.Uses, "docker/build-push-action@") }, "use docker/build-push-action")
	if got, want := image.With["tags"], "${{ env.IMAGE }}:"+versionExpr; got != want {
		t.Errorf("the image is tagged %v, want %s", got, want)
	}
	if image.With["platforms"] != "linux/amd64,linux/arm64" || image.With["push"] != true {
		t.Errorf("the image step builds %v and pushes %v, want linux/amd64,linux/arm64 pushed", image.With["platforms"], image.With["push"])
	}
	buildArgs, _ := image.With["build-args"].(string)
	for _, want := range []string{"VERSION=" + versionExpr, "REVISION=${{ github.sha }}", "BUILD_DATE="} {
		if !strings.Contains(buildArgs, want) {
			t.Errorf("the image's build-args %q lack %s", buildArgs, want)
		}
	}

	chart := w.step(t, func(s workflowStep) bool { return strings.Contains(s.Run, "helm package") }, "run helm package")
	if chart.Env["VERSION"] != versionExpr {
		t.Errorf("the chart step's VERSION is %q, want %s", chart.Env["VERSION"], versionExpr)
	}
	for _, want := range []string{`--version "$VERSION"`, `--app-version "$VERSION"`, `helm push "dist/lock-reaper-$VERSION.tgz" "$CHARTS"`} {
		if !strings.Contains(chart.Run, want) {
			t.Errorf("the chart step lacks %s:\n%s", want, chart.Run)
		}
	}
	if !strings.HasPrefix(w.Env["CHARTS"], "oci://") {
		t.Errorf("CHARTS=%q, want an OCI registry (oci://...)", w.Env["CHARTS"])
	}

	// The image the chart packaged with appVersion X renders is IMAGE:X.
	ch := loadChart(t)
	ch.Metadata.Version, ch.Metadata.AppVersion = "9.8.7", "9.8.7"
	rendered, err := renderChart(ch, withDSNs(map[string]any{"mode": "deployment"}))
	if err != nil {
		t.Fatal(err)
	}
	m := decodeRendered(t, rendered)
	if got := m.deployments[0].Spec.Template.Spec.Containers[0].Image; got != w.Env["IMAGE"]+":9.8.7" {
		t.Errorf("the chart packaged as 9.8.7 runs %s, want %s:9.8.7", got, w.Env["IMAGE"])
	}
}

// TestReleaseWorkflowPins: every action is pinned by a full commit SHA with
// its version in a comment, which Dependabot (.github/dependabot.yml) moves
// together; Helm is the version
// deploy/go.mod tests the chart with; the binaries are built by
// scripts/docker-build-cmd.sh with the release's stamps.
func TestReleaseWorkflowPins(t *testing.T) {
	t.Parallel()
	sha := regexp.MustCompile(`^[\w.-]+/[\w.-]+@[0-9a-f]{40}$`)
	for _, name := range []string{"ci.yml", "release.yml"} {
		b, err := os.ReadFile(filepath.Join(repoRoot, ".github", "workflows", name))
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			m := regexp.MustCompile(`^\s*(?:- )?uses: (\S+)(?:\s+#\s*(.*))?$`).FindStringSubmatch(line)
			if m == nil {
				continue
			}
			if !sha.MatchString(m[1]) {
				t.Errorf("%s: %q is not pinned by commit", name, strings.TrimSpace(line))
			} else if m[2] == "" {
				t.Errorf("%s: %q: say which version the commit is in a comment", name, strings.TrimSpace(line))
			}
		}
	}

	w := readWorkflow(t, "release.yml")
	goMod, err := os.ReadFile("go.mod")
	if err != nil {
		t.Fatal(err)
	}
	helmVersion := regexp.MustCompile(`(?m)^\s*helm\.sh/helm/v3 (v\S+)`).FindSubmatch(goMod)
	setupHelm := w.step(t, func(s workflowStep) bool { return strings.HasPrefix(s.Uses, "azure/setup-helm@") }, "set up Helm")
	if helmVersion == nil || setupHelm.With["version"] != string(helmVersion[1]) {
		t.Errorf("release.yml sets up Helm %v, deploy/go.mod tests the chart with %s", setupHelm.With["version"], helmVersion)
	}

	binaries := w.step(t, func(s workflowStep) bool { return strings.Contains(s.Run, "scripts/docker-build-cmd.sh") }, "build the binaries")
	for _, platform := range []string{"linux/amd64", "linux/arm64", "darwin/arm64"} {
		if !strings.Contains(binaries.Run, platform) {
			t.Errorf("the binaries step does not build %s:\n%s", platform, binaries.Run)
		}
	}
	for _, stamp := range []string{"VERSION", "REVISION", "BUILD_DATE"} {
		if binaries.Env[stamp] == "" {
			t.Errorf("the binaries step does not stamp %s", stamp)
		}
	}
	notes := w.step(t, func(s workflowStep) bool { return strings.Contains(s.Run, "scripts/changelog-section.sh") }, "extract the release notes")
	if !strings.Contains(notes.Run, `"$VERSION"`) || notes.Env["VERSION"] != "${{ steps.version.outputs.version }}" {
		t.Errorf("the release notes are not the changelog section of the tag's version:\n%s", notes.Run)
	}
}

// TestChangelogSection: scripts/changelog-section.sh prints a version's
// section of a Keep a Changelog file, with or without the tag's v, and fails
// for a version without one.
func TestChangelogSection(t *testing.T) {
	t.Parallel()
	changelog := filepath.Join(t.TempDir(), "CHANGELOG.md")
	if err := os.WriteFile(changelog, []byte(`# Changelog

All notable changes are documented here.

## [Unreleased]

### Added

- next

## [0.10.0] - 2026-09-01

- ten

## [0.1.0] - 2026-07-25

### Added

- the first release

[Unreleased]: https://github.com/lock-reaper/lock-reaper/compare/v0.10.0...HEAD
[0.1.0]: https://github.com/lock-reaper/lock-reaper/releases/tag/v0.1.0
`), 0o644); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(repoRoot, "scripts", "changelog-section.sh")
	for _, tc := range []struct{ version, want string }{
		{"v0.1.0", "### Added\n\n- the first release\n"},
		{"0.1.0", "### Added\n\n- the first release\n"},
		{"v0.10.0", "- ten\n"},
		{"Unreleased", "### Added\n\n- next\n"},
	} {
		out, err := exec.Command(script, tc.version, changelog).Output()
		if err != nil || string(out) != tc.want {
			t.Errorf("changelog-section.sh %s: %v\n%q, want\n%q", tc.version, err, out, tc.want)
		}
	}
	for _, version := range []string{"0.1", "v0.2.0", "0.1.0.1"} {
		out, err := exec.Command(script, version, changelog).CombinedOutput()
		if err == nil || !strings.Contains(string(out), `has no section "## [`) {
			t.Errorf("changelog-section.sh %s: %v\n%s, want a failure naming the missing section", version, err, out)
		}
	}
}
