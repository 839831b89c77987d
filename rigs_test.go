package main

import (
	"os/exec"
	"strings"
	"testing"
)

// The binary links no test rig: what only tests use (the test API server,
// the fault proxy, the claim helpers, the test environment) lives under
// internal/testing, and nothing the program imports reaches there.
func TestProgramImportsNoTestRig(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps .: %v", err)
	}
	const rigs = "github.com/lock-reaper/lock-reaper/internal/testing/"
	for _, pkg := range strings.Fields(string(out)) {
		if strings.HasPrefix(pkg, rigs) || pkg == "testing" {
			t.Errorf("the program imports %s: product packages import no test rig", pkg)
		}
	}
}
