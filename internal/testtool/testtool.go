// Package testtool decides, in one place, what a test does when a program it
// runs (promtool, pgbouncer, redis-server) is not installed: under CI
// (CI=true, as .ci/run sets it) the test fails, since a skipped test there
// would read as a pass; locally it skips, saying what is missing and how to
// get it. `go test -v` shows each skip.
package testtool

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// Require returns the path of program, or fails (CI) or skips (locally) the
// test with how to get it.
func Require(t testing.TB, program, howToGet string) string {
	t.Helper()
	path, err := exec.LookPath(program)
	if err == nil {
		return path
	}
	msg := program + " not found (" + howToGet + "); this test needs it"
	if InCI() {
		t.Fatalf("%s: CI must install it (scripts/tools.sh)", msg)
	}
	t.Skipf("SKIP: %s", msg)
	return ""
}

// InCI says whether the tests run under CI: CI=true (or 1).
func InCI() bool {
	v := strings.ToLower(os.Getenv("CI"))
	return v == "true" || v == "1"
}
