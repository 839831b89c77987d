// Package pgcluster starts throwaway PostgreSQL clusters for tests that need
// a server configured differently from the shared test server: a primary
// with replication enabled, and hot standbys made from it with
// pg_basebackup. Each cluster lives in a t.TempDir(), listens on a free
// loopback port (TCP only, no Unix socket), trusts every local connection
// through its own pg_hba.conf, and is stopped at cleanup. The machine's own
// PostgreSQL is never touched.
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
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// DefaultBinDir is where Debian's postgresql-15 package installs the server.
const DefaultBinDir = "/usr/lib/postgresql/15/bin"

// Cluster is one running throwaway PostgreSQL server.
type Cluster struct {
	Port int
	Dir  string // data directory
	bin  string
	cred *syscall.Credential
	log  string
}

// BinDir finds the PostgreSQL server binaries: DefaultBinDir, else the newest
// /usr/lib/postgresql/*/bin holding initdb and pg_basebackup.
func BinDir() (string, bool) {
	if hasServer(DefaultBinDir) {
		return DefaultBinDir, true
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Strings(dirs)
	for i := len(dirs) - 1; i >= 0; i-- {
		if hasServer(dirs[i]) {
			return dirs[i], true
		}
	}
	return "", false
}

func hasServer(dir string) bool {
	for _, name := range []string{"initdb", "pg_ctl", "postgres", "pg_basebackup"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			return false
		}
	}
	return true
}

// RequireBinaries returns the server binaries' directory, or skips the test
// with a message saying what is missing.
func RequireBinaries(t testing.TB) string {
	t.Helper()
	dir, ok := BinDir()
	if !ok {
		t.Skipf("PostgreSQL server binaries (initdb, pg_ctl, postgres, pg_basebackup) not found in %s or /usr/lib/postgresql/*/bin: install postgresql-15 to run this test", DefaultBinDir)
	}
	return dir
}

// StartPrimary initialises and starts a cluster that accepts replication
// connections (wal_level=replica) and returns it once it accepts queries.
func StartPrimary(t testing.TB) *Cluster {
	t.Helper()
	bin := RequireBinaries(t)
	c := &Cluster{bin: bin}
	c.prepare(t)
	c.run(t, "initdb", "-D", c.Dir, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync")
	// Only this cluster's own pg_hba.conf: trust on loopback, replication included.
	hba := "host all all 127.0.0.1/32 trust\nhost replication all 127.0.0.1/32 trust\n"
	c.writeOwned(t, filepath.Join(c.Dir, "pg_hba.conf"), hba)
	c.appendConf(t, "wal_level = replica\nmax_wal_senders = 4\nhot_standby = on\n")
	c.start(t)
	return c
}

// StartStandby makes a hot standby of the primary with pg_basebackup and
// starts it; it replays the primary's WAL continuously.
func (p *Cluster) StartStandby(t testing.TB) *Cluster {
	t.Helper()
	c := &Cluster{bin: p.bin}
	c.prepare(t)
	// pg_basebackup wants an empty or missing target directory.
	c.run(t, "pg_basebackup", "-h", "127.0.0.1", "-p", strconv.Itoa(p.Port), "-U", "postgres",
		"-D", c.Dir, "-R", "-X", "stream", "--no-sync", "-c", "fast")
	c.start(t)
	return c
}

// prepare picks a port and a data directory owned by the user the server
// runs as (postgres when the tests run as root: the server refuses root).
func (c *Cluster) prepare(t testing.TB) {
	t.Helper()
	uid, gid := os.Getuid(), os.Getgid()
	if uid == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Skipf("running as root and no postgres user to run a throwaway PostgreSQL server as: %v", err)
		}
		uid, _ = strconv.Atoi(u.Uid)
		gid, _ = strconv.Atoi(u.Gid)
		c.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	}
	base := t.TempDir()
	// t.TempDir's parent is private to the test's user; the server's user
	// must be able to pass through it.
	if c.cred != nil {
		if err := os.Chmod(filepath.Dir(base), 0o711); err != nil {
			t.Fatalf("pgcluster: %v", err)
		}
		if err := os.Chown(base, uid, gid); err != nil {
			t.Fatalf("pgcluster: %v", err)
		}
	}
	c.Dir = filepath.Join(base, "data")
	c.log = filepath.Join(base, "server.log")
	c.Port = freePort(t)
}

func (c *Cluster) start(t testing.TB) {
	t.Helper()
	c.appendConf(t, fmt.Sprintf("port = %d\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = ''\nfsync = off\n", c.Port))
	c.run(t, "pg_ctl", "-D", c.Dir, "-l", c.log, "-w", "-t", "60", "start")
	t.Cleanup(c.Stop)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		conn, err := pgx.Connect(ctx, c.URL("postgres"))
		if err == nil {
			conn.Close(ctx)
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("pgcluster: server on port %d does not accept connections: %v\n%s", c.Port, err, c.Log())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Stop stops the server at once; stopping twice is harmless.
func (c *Cluster) Stop() {
	cmd := exec.Command(filepath.Join(c.bin, "pg_ctl"), "-D", c.Dir, "-m", "immediate", "-w", "stop")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred}
	_ = cmd.Run()
}

// URL is the connection URL of a database of the cluster, as postgres.
func (c *Cluster) URL(database string) string {
	u := url.URL{Scheme: "postgres", User: url.User("postgres"), Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(c.Port)),
		Path: "/" + database, RawQuery: "sslmode=disable"}
	return u.String()
}

// Log is the server's log so far, for failure messages.
func (c *Cluster) Log() string {
	b, _ := os.ReadFile(c.log)
	return string(b)
}

// WaitReplayed waits until the standby has replayed everything the primary
// has written so far.
func (c *Cluster) WaitReplayed(t testing.TB, primary *Cluster) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var target string
	if err := queryRow(ctx, primary.URL("postgres"), "SELECT pg_current_wal_lsn()::text", &target); err != nil {
		t.Fatalf("pgcluster: read the primary's WAL position: %v", err)
	}
	for {
		var caught bool
		err := queryRow(ctx, c.URL("postgres"), "SELECT pg_last_wal_replay_lsn() >= $1::text::pg_lsn", &caught, target)
		if err == nil && caught {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("pgcluster: standby did not replay up to %s: %v\n%s", target, err, c.Log())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Exec runs SQL (several statements allowed) in a database of the cluster.
func (c *Cluster) Exec(t testing.TB, database, sql string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, c.URL(database))
	if err == nil {
		defer conn.Close(ctx)
		_, err = conn.Exec(ctx, sql)
	}
	if err != nil {
		t.Fatalf("pgcluster: on port %d, database %s: %v", c.Port, database, err)
	}
}

func queryRow(ctx context.Context, dsn, sql string, dest any, args ...any) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	return conn.QueryRow(ctx, sql, args...).Scan(dest)
}

func (c *Cluster) run(t testing.TB, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(filepath.Join(c.bin, name), args...)
	cmd.Dir = filepath.Dir(c.Dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("pgcluster: %s %s: %v\n%s\n%s", name, strings.Join(args, " "), err, out, c.Log())
	}
}

func (c *Cluster) appendConf(t testing.TB, lines string) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(c.Dir, "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err == nil {
		_, err = f.WriteString("\n" + lines)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		t.Fatalf("pgcluster: write postgresql.conf: %v", err)
	}
}

func (c *Cluster) writeOwned(t testing.TB, path, body string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatalf("pgcluster: %v", err)
	}
	if c.cred != nil {
		if err := os.Chown(path, int(c.cred.Uid), int(c.cred.Gid)); err != nil {
			t.Fatalf("pgcluster: %v", err)
		}
	}
}

func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("pgcluster: find a free port: %v", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}
