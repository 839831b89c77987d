package deploy

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestOwnPostgresScript starts a cluster with scripts/own-postgres.sh (as
// .ci/run does where the machine's PostgreSQL does not trust user
// postgres), checks that it listens where REAPER_TEST_DATABASE_URL says, and
// that $OWN_POSTGRES_STOP stops it and removes its directory.
func TestOwnPostgresScript(t *testing.T) {
	t.Parallel()
	script := filepath.Join(repoRoot, "scripts", "own-postgres.sh")
	var stderr strings.Builder
	cmd := exec.Command("bash", script)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		if strings.Contains(stderr.String(), "no PostgreSQL server programs") && os.Getenv("CI") == "" {
			t.Skipf("SKIP: %s", stderr.String())
		}
		t.Fatalf("own-postgres.sh: %v\n%s", err, stderr.String())
	}
	vars := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if m := regexp.MustCompile(`^export (\w+)=(.*)$`).FindStringSubmatch(line); m != nil {
			// The values are printed with bash's %q; let bash read them back.
			v, err := exec.Command("bash", "-c", "printf %s "+m[2]).Output()
			if err != nil {
				t.Fatal(err)
			}
			vars[m[1]] = string(v)
		}
	}
	stop := vars["OWN_POSTGRES_STOP"]
	if stop == "" {
		t.Fatalf("own-postgres.sh printed no OWN_POSTGRES_STOP:\n%s", out)
	}
	t.Cleanup(func() { _ = exec.Command("bash", "-c", stop).Run() })
	m := regexp.MustCompile(`^postgres://postgres@(127\.0\.0\.1:\d+)/postgres\?sslmode=disable$`).FindStringSubmatch(vars["REAPER_TEST_DATABASE_URL"])
	if m == nil {
		t.Fatalf("REAPER_TEST_DATABASE_URL=%q, want postgres://postgres@127.0.0.1:<port>/postgres?sslmode=disable", vars["REAPER_TEST_DATABASE_URL"])
	}
	conn, err := net.DialTimeout("tcp", m[1], 5*time.Second)
	if err != nil {
		t.Fatalf("nothing listens on %s: %v", m[1], err)
	}
	conn.Close()
	dir := regexp.MustCompile(`rm -rf (/tmp/lock-reaper-pg\.\w+)$`).FindStringSubmatch(stop)
	if dir == nil {
		t.Fatalf("OWN_POSTGRES_STOP=%q does not remove the cluster's directory", stop)
	}
	if out, err := exec.Command("bash", "-c", stop).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", stop, err, out)
	}
	if _, err := os.Stat(dir[1]); !os.IsNotExist(err) {
		t.Errorf("%s is still there after OWN_POSTGRES_STOP: %v", dir[1], err)
	}
	if conn, err := net.DialTimeout("tcp", m[1], time.Second); err == nil {
		conn.Close()
		t.Errorf("%s still accepts connections after OWN_POSTGRES_STOP", m[1])
	}
}
