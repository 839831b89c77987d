package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestBuildPushImageBuilders runs scripts/build-push-image.sh with DRY_RUN=1
// and fake docker and podman on a PATH of the test's own: it creates a
// multi-platform buildx builder only when the current one cannot build
// several platforms, takes podman where docker is absent, says which it
// used, and fails with what to install when neither is there.
func TestBuildPushImageBuilders(t *testing.T) {
	t.Parallel()
	requireTool(t, "git", "Debian: apt-get install git")
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	if err := exec.Command("git", "-C", root, "rev-parse", "HEAD").Run(); err != nil {
		t.Skipf("not a git checkout: %v", err)
	}
	// The PATH holds only what the script needs besides docker or podman.
	system := t.TempDir()
	for _, tool := range []string{"sh", "sed", "head", "grep", "mktemp", "rm", "date", "git", "dirname", "cat", "printf"} {
		p, err := exec.LookPath(tool)
		if err != nil {
			t.Fatalf("%s: %v", tool, err)
		}
		if err := os.Symlink(p, filepath.Join(system, tool)); err != nil {
			t.Fatal(err)
		}
	}
	// fake docker: buildx with the current builder's driver from
	// FAKE_DRIVER, and lock-reaper-builder present when FAKE_HAS_BUILDER is set.
	fakeDocker := `#!/bin/sh
case "$1 $2" in
"buildx version") echo "github.com/docker/buildx v0.20.0"; exit 0 ;;
"buildx inspect")
	if [ "$3" = lock-reaper-builder ]; then [ -n "$FAKE_HAS_BUILDER" ]; exit $?; fi
	printf 'Name: default\nDriver: %s\n' "$FAKE_DRIVER"; exit 0 ;;
esac
echo "docker ran: $*"; exit 1
`
	fakePodman := "#!/bin/sh\necho \"podman ran: $*\"; exit 1\n"
	withDocker, withPodman, withNeither := t.TempDir(), t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(withDocker, "docker"), []byte(fakeDocker), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(withPodman, "podman"), []byte(fakePodman), 0o755); err != nil {
		t.Fatal(err)
	}
	const image = "registry.example.com/pulp/lock-reaper"
	for _, tc := range []struct {
		name      string
		path      string
		env       []string
		wantFail  bool
		want      []string // lines of the output, in order
		forbidden []string
	}{
		{"docker's default builder: create one", withDocker, []string{"FAKE_DRIVER=docker"}, false, []string{
			`creating builder lock-reaper-builder (driver docker-container; the current builder's driver "docker" builds one platform only)`,
			"+ docker buildx create --use --name lock-reaper-builder --driver docker-container",
			"+ docker buildx build --platform linux/amd64,linux/arm64 --build-arg VERSION=9.9.9",
			"--tag " + image + ":9.9.9 --metadata-file ",
			" --push .",
		}, []string{"buildx use"}},
		{"docker, the builder made before", withDocker, []string{"FAKE_DRIVER=docker", "FAKE_HAS_BUILDER=1"}, false, []string{
			"building with docker buildx, builder lock-reaper-builder",
			"+ docker buildx use lock-reaper-builder",
			"+ docker buildx build --platform linux/amd64,linux/arm64",
		}, []string{"buildx create"}},
		{"docker, a multi-platform builder in use", withDocker, []string{"FAKE_DRIVER=docker-container"}, false, []string{
			"building with docker buildx, builder default (driver docker-container)",
			"+ docker buildx build --platform linux/amd64,linux/arm64",
		}, []string{"buildx create", "buildx use"}},
		{"podman where docker is absent", withPodman, nil, false, []string{
			"building with podman (a manifest list of linux/amd64,linux/arm64)",
			"+ podman build --platform linux/amd64,linux/arm64 --build-arg VERSION=9.9.9",
			"--manifest " + image + ":9.9.9 .",
			"+ podman manifest push --all --digestfile ",
			" " + image + ":9.9.9 docker://" + image + ":9.9.9",
		}, []string{"docker buildx"}},
		{"neither", withNeither, nil, true, []string{
			"neither docker (with buildx) nor podman is installed",
			"dnf install podman",
		}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := exec.Command(filepath.Join(root, "scripts", "build-push-image.sh"))
			run.Dir = t.TempDir()
			run.Env = append([]string{"PATH=" + tc.path + string(os.PathListSeparator) + system, "HOME=" + t.TempDir(),
				"IMAGE=" + image, "VERSION=9.9.9", "DRY_RUN=1"}, tc.env...)
			out, err := run.CombinedOutput()
			if (err != nil) != tc.wantFail {
				t.Fatalf("build-push-image.sh: %v, want failure %v\n%s", err, tc.wantFail, out)
			}
			text := string(out)
			at := 0
			for _, want := range tc.want {
				i := strings.Index(text[at:], want)
				if i < 0 {
					t.Fatalf("the output lacks %q after byte %d:\n%s", want, at, text)
				}
				at += i + len(want)
			}
			for _, no := range tc.forbidden {
				if strings.Contains(text, no) {
					t.Errorf("the output has %q:\n%s", no, text)
				}
			}
			if strings.Contains(text, " ran: ") {
				t.Errorf("a dry run ran a build, push or builder command:\n%s", text)
			}
		})
	}
}
