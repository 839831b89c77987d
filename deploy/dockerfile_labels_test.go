package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	"github.com/moby/buildkit/frontend/dockerfile/parser"
	"github.com/moby/buildkit/frontend/dockerfile/shell"
)

// TestDockerfileOCILabels: the image says where it came from, as BuildKit
// expands the final stage's LABEL with the build arguments
// scripts/build-push-image.sh passes (and without them, the ARG defaults).
func TestDockerfileOCILabels(t *testing.T) {
	t.Parallel()
	img := parseDockerfile(t)
	for _, tc := range []struct {
		args []string
		want map[string]string
	}{
		{[]string{"VERSION=1.2.3", "REVISION=0123abcd", "BUILD_DATE=2026-07-25T08:00:00Z", "SOURCE=" + argDefault(t, img.final, "SOURCE")}, map[string]string{
			"org.opencontainers.image.source":   "https://github.com/lock-reaper/lock-reaper",
			"org.opencontainers.image.version":  "1.2.3",
			"org.opencontainers.image.revision": "0123abcd",
			"org.opencontainers.image.created":  "2026-07-25T08:00:00Z",
		}},
		{[]string{"VERSION=" + argDefault(t, img.final, "VERSION"), "REVISION=" + argDefault(t, img.final, "REVISION"),
			"BUILD_DATE=" + argDefault(t, img.final, "BUILD_DATE"), "SOURCE=" + argDefault(t, img.final, "SOURCE")}, map[string]string{
			"org.opencontainers.image.version":  "dev",
			"org.opencontainers.image.revision": "unknown",
			"org.opencontainers.image.created":  "unknown",
		}},
	} {
		got := map[string]string{}
		lex := shell.NewLex(parser.DefaultEscapeToken)
		for _, c := range img.final.Commands {
			label, ok := c.(*instructions.LabelCommand)
			if !ok {
				continue
			}
			for _, kv := range label.Labels {
				v, err := lex.ProcessWordWithMatches(kv.Value, shell.EnvsFromSlice(tc.args))
				if err != nil {
					t.Fatalf("LABEL %s=%s: %v", kv.Key, kv.Value, err)
				}
				got[kv.Key] = v.Result
			}
		}
		for k, want := range tc.want {
			if got[k] != want {
				t.Errorf("with %q: LABEL %s=%q, want %q", tc.args, k, got[k], want)
			}
		}
		if got["org.opencontainers.image.title"] != "lock-reaper" {
			t.Errorf("LABEL org.opencontainers.image.title=%q", got["org.opencontainers.image.title"])
		}
	}
}

// TestBuildPushImageScript runs scripts/build-push-image.sh with a fake
// docker on PATH: it builds this checkout with --build-arg VERSION (the
// chart's appVersion by default) and REVISION (the commit), tags the image
// with the version, pushes it, and prints the digest and the Helm values
// that pin it.
func TestBuildPushImageScript(t *testing.T) {
	t.Parallel()
	requireTool(t, "git", "Debian: apt-get install git")
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	head, err := exec.Command("git", "-C", root, "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skipf("not a git checkout: %v", err)
	}
	fakeBin := t.TempDir()
	const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	fakeDocker := `#!/bin/sh
case "$1 $2" in
"buildx version") echo "github.com/docker/buildx v0.20.0"; exit 0 ;;
"buildx inspect") printf 'Name: multi\nDriver: docker-container\n'; exit 0 ;;
esac
for a in "$@"; do printf '%s\n' "$a"; done >"$FAKE_DOCKER_LOG"
pwd -P >"$FAKE_DOCKER_LOG.pwd"
while [ $# -gt 0 ]; do
	if [ "$1" = --metadata-file ]; then
		printf '{\n  "containerimage.digest": "` + digest + `",\n  "image.name": "x"\n}\n' >"$2"
	fi
	shift
done
`
	if err := os.WriteFile(filepath.Join(fakeBin, "docker"), []byte(fakeDocker), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, version, wantVersion string
	}{
		{"appVersion", "", loadChart(t).Metadata.AppVersion},
		{"VERSION", "1.2.3-rc.1", "1.2.3-rc.1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			log := filepath.Join(t.TempDir(), "docker.log")
			run := exec.Command(filepath.Join(root, "scripts", "build-push-image.sh"))
			run.Dir = t.TempDir()
			run.Env = []string{"PATH=" + fakeBin + string(os.PathListSeparator) + os.Getenv("PATH"), "FAKE_DOCKER_LOG=" + log,
				"IMAGE=registry.example.com/pulp/lock-reaper", "HOME=" + t.TempDir()}
			if tc.version != "" {
				run.Env = append(run.Env, "VERSION="+tc.version)
			}
			out, err := run.CombinedOutput()
			if err != nil {
				t.Fatalf("build-push-image.sh: %v\n%s", err, out)
			}
			args := strings.Split(strings.TrimSpace(readLog(t, log)), "\n")
			if !slices.Equal(args[:2], []string{"buildx", "build"}) || args[len(args)-1] != "." {
				t.Fatalf("docker %q, want buildx build ... .", args)
			}
			if dir := strings.TrimSpace(readLog(t, log+".pwd")); dir != mustEvalSymlinks(t, root) {
				t.Errorf("docker runs in %s, want the repository root", dir)
			}
			pairs := map[string][]string{}
			for i := 2; i < len(args)-1; i++ {
				if strings.HasPrefix(args[i], "--") && i+1 < len(args)-1 && !strings.HasPrefix(args[i+1], "--") {
					pairs[args[i]] = append(pairs[args[i]], args[i+1])
					i++
				} else {
					pairs[args[i]] = append(pairs[args[i]], "")
				}
			}
			rev := strings.TrimSpace(string(head))
			buildArgs := pairs["--build-arg"]
			if !slices.Contains(buildArgs, "VERSION="+tc.wantVersion) {
				t.Errorf("--build-arg %q lacks VERSION=%s", buildArgs, tc.wantVersion)
			}
			if !slices.ContainsFunc(buildArgs, func(a string) bool { return strings.HasPrefix(a, "BUILD_DATE=20") }) {
				t.Errorf("--build-arg %q lacks BUILD_DATE=<now, RFC 3339>", buildArgs)
			}
			if !strings.Contains(string(out), "building with docker buildx, builder multi (driver docker-container)") {
				t.Errorf("the script does not say what it builds with:\n%s", out)
			}
			if !slices.Contains(buildArgs, "REVISION="+rev) && !slices.Contains(buildArgs, "REVISION="+rev+"-dirty") {
				t.Errorf("--build-arg %q lacks REVISION=%s (git rev-parse HEAD)", buildArgs, rev)
			}
			if got := pairs["--tag"]; !slices.Equal(got, []string{"registry.example.com/pulp/lock-reaper:" + tc.wantVersion}) {
				t.Errorf("--tag %q, want the repository tagged with the version", got)
			}
			if _, ok := pairs["--push"]; !ok {
				t.Error("docker buildx build without --push")
			}
			if want := "--set image.repository=registry.example.com/pulp/lock-reaper --set image.tag=" + tc.wantVersion + " --set image.digest=" + digest; !strings.Contains(string(out), want) {
				t.Errorf("the script's output lacks %q:\n%s", want, out)
			}
		})
	}
	// Every build argument the script passes is an ARG of the final stage.
	img := parseDockerfile(t)
	for _, arg := range []string{"VERSION", "REVISION", "BUILD_DATE"} {
		argDefault(t, img.final, arg)
		argDefault(t, img.build, arg)
	}
}

func mustEvalSymlinks(t *testing.T, p string) string {
	t.Helper()
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
