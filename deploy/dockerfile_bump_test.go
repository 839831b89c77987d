package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestBumpBaseImages runs scripts/bump-base-images.sh on a copy of the
// Dockerfile with a fake crane, and checks that it asks the registry for
// each base image's tag and pins what it answers, the golang tag following
// go.mod.
func TestBumpBaseImages(t *testing.T) {
	t.Parallel()
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	const newDigest = "sha256:1111111111111111111111111111111111111111111111111111111111111111"
	fake := "#!/bin/sh\n[ \"$1\" = digest ] || exit 9\necho \"$2\" >>\"" + dir + "/asked\"\necho " + newDigest + "\n"
	if err := os.WriteFile(filepath.Join(dir, "crane"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	orig, err := os.ReadFile(filepath.Join(root, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	// An older Go patch release in the copy: the script moves it to go.mod's.
	stale := regexp.MustCompile(`golang:[0-9.]+`).ReplaceAll(orig, []byte("golang:1.0.1"))
	dockerfile := filepath.Join(dir, "Dockerfile")
	if err := os.WriteFile(dockerfile, stale, 0o644); err != nil {
		t.Fatal(err)
	}

	cmd := exec.Command(filepath.Join(root, "scripts", "bump-base-images.sh"), dockerfile)
	cmd.Env = append(os.Environ(), "PATH="+dir+":"+os.Getenv("PATH"))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("bump-base-images.sh: %v\n%s", err, out)
	}
	bumped, _ := os.ReadFile(dockerfile)
	asked, _ := os.ReadFile(filepath.Join(dir, "asked"))

	goMod, _ := os.ReadFile(filepath.Join(root, "go.mod"))
	goVersion := regexp.MustCompile(`(?m)^go ([0-9.]+)\s*$`).FindSubmatch(goMod)[1]
	from := regexp.MustCompile(`(?m)^FROM .*?([a-z0-9./-]+:[A-Za-z0-9._-]+)@(sha256:[0-9a-f]{64})`).FindAllSubmatch(bumped, -1)
	if len(from) != 2 {
		t.Fatalf("bumped Dockerfile has %d pinned FROM lines, want 2:\n%s", len(from), bumped)
	}
	for _, m := range from {
		if string(m[2]) != newDigest {
			t.Errorf("%s pinned to %s, want the registry's %s", m[1], m[2], newDigest)
		}
		if !strings.Contains(string(asked), string(m[1])+"\n") {
			t.Errorf("the script did not ask the registry for %s (asked %q)", m[1], asked)
		}
	}
	if want := "golang:" + string(goVersion); !strings.HasPrefix(string(from[0][1]), want) {
		t.Errorf("build stage is %s, want %s (go.mod)", from[0][1], want)
	}
	// Nothing else changed.
	strip := regexp.MustCompile(`golang:[0-9.]+|@sha256:[0-9a-f]{64}`)
	if string(strip.ReplaceAll(bumped, nil)) != string(strip.ReplaceAll(stale, nil)) {
		t.Error("the script changed more than the base images' tags and digests")
	}
}
