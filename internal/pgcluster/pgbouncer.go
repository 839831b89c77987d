package pgcluster

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lock-reaper/lock-reaper/internal/localserver"
)

// PgBouncer is a running pgbouncer started for a test.
type PgBouncer struct {
	Port int
	mu   sync.Mutex
	log  strings.Builder
}

// StartPgBouncer starts pgbouncer in front of the PostgreSQL server at
// upstream (host:port), with the given pool_mode, on a free loopback port.
// Every database name is passed through to the server, and every user in
// users is let in without a password (auth_type trust); the server's own
// authentication still applies. It writes its ini in a t.TempDir(), and the
// test skips when pgbouncer is not installed.
func StartPgBouncer(t localserver.TB, upstream, poolMode string, poolSize int, users ...string) *PgBouncer {
	t.Helper()
	bin := localserver.Require(t, "pgbouncer", "Debian: apt-get install pgbouncer")
	host, port, err := net.SplitHostPort(upstream)
	if err != nil {
		t.Fatalf("pgbouncer upstream %q: %v", upstream, err)
	}
	dir := t.TempDir()
	var userlist strings.Builder
	for _, u := range users {
		fmt.Fprintf(&userlist, "%q \"\"\n", u)
	}
	userFile := filepath.Join(dir, "userlist.txt")
	b := &PgBouncer{Port: localserver.MustFreePort(t)}
	ini := fmt.Sprintf(`[databases]
* = host=%s port=%s

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = %d
unix_socket_dir =
auth_type = trust
auth_file = %s
pool_mode = %s
default_pool_size = %d
max_client_conn = 500
server_reset_query =
server_round_robin = 1
`, host, port, b.Port, userFile, poolMode, poolSize)
	if os.Getuid() == 0 {
		// pgbouncer refuses to run as root; it drops to this user itself.
		if _, err := user.Lookup("postgres"); err != nil {
			t.Skipf("running as root and no postgres user for pgbouncer to run as: %v", err)
		}
		ini += "user = postgres\n"
	}
	iniFile := filepath.Join(dir, "pgbouncer.ini")
	for path, body := range map[string]string{userFile: userlist.String(), iniFile: ini} {
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatalf("pgbouncer: %v", err)
		}
	}
	cmd := exec.Command(bin, iniFile)
	cmd.Stdout, cmd.Stderr = b, b
	if err := cmd.Start(); err != nil {
		t.Fatalf("start pgbouncer: %v", err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	for {
		conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(b.Port)))
		if err == nil {
			_ = conn.Close()
			return b
		}
		if ctx.Err() != nil {
			t.Fatalf("pgbouncer does not listen on %d: %v\n%s", b.Port, err, b.Log())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// URL is dsn (a postgres:// URL) sent through this pgbouncer instead.
func (b *PgBouncer) URL(t localserver.TB, dsn string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatalf("pgbouncer: %v", err)
	}
	u.Host = net.JoinHostPort("127.0.0.1", strconv.Itoa(b.Port))
	return u.String()
}

// Write collects pgbouncer's log.
func (b *PgBouncer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.log.Write(p)
}

// Log is pgbouncer's log so far, for failure messages.
func (b *PgBouncer) Log() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.log.String()
}
