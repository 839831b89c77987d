// Package localserver holds what starting a local server program
// (redis-server, postgres, pgbouncer) needs, for the demo's throwaway
// servers (internal/throwaway) and the tests' own (internal/redisserver,
// internal/pgcluster) alike: a free loopback port, and the program's path.
// Require decides, in one place, what a test does when such a program is
// not installed: under CI (CI=true, as .ci/run sets it) the test fails,
// since a skipped test there would read as a pass; locally it skips, saying
// what is missing and how to get it. `go test -v` shows each skip.
//
// The package does not import testing: the program should not link the
// testing package for its demo. TB is the part of testing.TB it needs.
package localserver

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
)

// TB is the part of testing.TB the tests' helpers use; *testing.T and
// *testing.B are TBs.
type TB interface {
	Helper()
	Cleanup(func())
	TempDir() string
	Fatalf(format string, args ...any)
	Skip(args ...any)
	Skipf(format string, args ...any)
}

// Require returns the path of program, or fails (CI) or skips (locally) the
// test with how to get it.
func Require(t TB, program, howToGet string) string {
	t.Helper()
	path, err := exec.LookPath(program)
	if err == nil {
		return path
	}
	Missing(t, program+" not found ("+howToGet+"); this test needs it")
	return ""
}

// Missing fails (CI) or skips (locally) a test whose program is not
// installed, msg saying what is missing and how to get it.
func Missing(t TB, msg string) {
	t.Helper()
	if InCI() {
		t.Fatalf("%s: CI must install it (scripts/tools.sh)", msg)
	}
	t.Skipf("SKIP: %s", msg)
}

// InCI says whether the tests run under CI: CI=true (or 1).
func InCI() bool {
	v := strings.ToLower(os.Getenv("CI"))
	return v == "true" || v == "1"
}

// FreePort returns a loopback TCP port that was free a moment ago, for a
// server about to listen on it.
func FreePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free loopback port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// MustFreePort is FreePort for a test's helper: it fails t when no port can
// be had.
func MustFreePort(t TB) int {
	t.Helper()
	port, err := FreePort()
	if err != nil {
		t.Fatalf("%v", err)
	}
	return port
}
