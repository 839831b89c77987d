package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestVersionNamesTheCommit builds lock-reaper from this checkout as `make
// build` does (scripts/docker-build-cmd.sh, REVISION stamped) and checks that
// `lock-reaper version` names the checkout's commit and prints the version
// and build date the build stamped. In a clone Go records the commit itself
// and whether the tree was modified; in a git worktree (.git is a file) it
// records nothing and the stamped REVISION stands.
func TestVersionNamesTheCommit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	head, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skipf("not a git checkout: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "lock-reaper")
	build := exec.Command("scripts/docker-build-cmd.sh", bin)
	// GOFLAGS=-buildvcs=false in the caller's environment would keep Go
	// from recording the commit; the build here wants it recorded.
	rev := strings.TrimSpace(string(head))
	build.Env = append(os.Environ(), "GOFLAGS=-buildvcs=true", "VERSION=v9.9.9-test", "REVISION="+rev, "BUILD_DATE=2026-07-25T08:00:00Z")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("scripts/docker-build-cmd.sh: %v\n%s", err, out)
	}
	for _, arg := range []string{"version", "--version"} {
		out, err := exec.Command(bin, arg).Output()
		if err != nil {
			t.Fatalf("lock-reaper %s: %v", arg, err)
		}
		text := string(out)
		for _, want := range []string{
			"lock-reaper v9.9.9-test\n",
			"  commit:     " + rev,
			"  built:      2026-07-25T08:00:00Z\n",
			"  go:         go1.",
		} {
			if !strings.Contains(text, want) {
				t.Errorf("lock-reaper %s lacks %q:\n%s", arg, want, text)
			}
		}
		if gitDir, err := os.Stat(".git"); err == nil && gitDir.IsDir() &&
			!strings.Contains(text, rev+", unmodified\n") && !strings.Contains(text, rev+", with local changes (modified)\n") {
			t.Errorf("lock-reaper %s does not say whether the tree was modified (Go's vcs.modified):\n%s", arg, text)
		}
	}
}
