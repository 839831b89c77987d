// Package pgcluster starts throwaway PostgreSQL clusters for tests that need
// a server configured differently from the shared test server: a primary
// with replication enabled, and hot standbys made from it with
// pg_basebackup. Each cluster lives in a t.TempDir(), listens on a free
// loopback port (TCP only, no Unix socket), trusts every local connection
// through its own pg_hba.conf, and is stopped at cleanup. The machine's own
// PostgreSQL is never touched. Create and Launch, which make and start a
// cluster, also serve the demo's own server (internal/throwaway).
package pgcluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lock-reaper/lock-reaper/internal/localserver"
	"github.com/lock-reaper/lock-reaper/internal/pgbin"
)

// Cluster is one running throwaway PostgreSQL server.
type Cluster struct {
	Port int
	Dir  string // data directory
	bin  string
	cred *syscall.Credential
	log  string
}

// standbyPrograms are the server's programs a primary and its standby
// need, all of one version.
var standbyPrograms = []string{"initdb", "pg_ctl", "postgres", "pg_basebackup"}

// BinDir finds the PostgreSQL server's programs where the usual packages
// put them (pgbin.Find).
func BinDir() (string, error) {
	return pgbin.Find(pgbin.UsualPlaces, standbyPrograms...)
}

// RequireBinaries returns the server programs' directory, or fails (CI) or
// skips (locally) the test, saying what is missing and how to install it,
// as localserver.Require does for a program on PATH.
func RequireBinaries(t localserver.TB) string {
	t.Helper()
	dir, err := BinDir()
	if err == nil {
		return dir
	}
	localserver.Missing(t, err.Error()+"; this test needs them")
	return ""
}

// StartPrimary initialises and starts a cluster that accepts replication
// connections (wal_level=replica) and returns it once it accepts queries.
func StartPrimary(t localserver.TB) *Cluster {
	t.Helper()
	bin := RequireBinaries(t)
	c := prepare(t, bin)
	c.run(t, initdb(c.Dir)...)
	// Only this cluster's own pg_hba.conf: trust on loopback, replication included.
	hba := "host all all 127.0.0.1/32 trust\nhost replication all 127.0.0.1/32 trust\n"
	c.writeOwned(t, filepath.Join(c.Dir, "pg_hba.conf"), hba)
	if err := c.appendConf("wal_level = replica\nmax_wal_senders = 4\nhot_standby = on\n"); err != nil {
		t.Fatalf("pgcluster: %v", err)
	}
	c.start(t)
	return c
}

// StartStandby makes a hot standby of the primary with pg_basebackup and
// starts it; it replays the primary's WAL continuously.
func (p *Cluster) StartStandby(t localserver.TB) *Cluster {
	t.Helper()
	c := prepare(t, p.bin)
	// pg_basebackup wants an empty or missing target directory.
	c.run(t, "pg_basebackup", "-h", "127.0.0.1", "-p", strconv.Itoa(p.Port), "-U", "postgres",
		"-D", c.Dir, "-R", "-X", "stream", "--no-sync", "-c", "fast")
	c.start(t)
	return c
}

// prepare is newCluster in a fresh t.TempDir(): it skips the test when
// there is no user to run the server as.
func prepare(t localserver.TB, bin string) *Cluster {
	t.Helper()
	c, err := newCluster(bin, t.TempDir())
	if errors.Is(err, errNoServerUser) {
		t.Skipf("%v", err)
	}
	if err != nil {
		t.Fatalf("pgcluster: %v", err)
	}
	return c
}

// errNoServerUser says that the tests or the program run as root, whose
// server the PostgreSQL server refuses to be, and no postgres user exists to
// run it as.
var errNoServerUser = errors.New("running as root and no postgres user to run a throwaway PostgreSQL server as")

// newCluster picks a port and a data directory, base/data, for a cluster of
// the user the server runs as (postgres when running as root: the server
// refuses root). base is an empty directory of the caller's; its parent is
// opened (0711) for the server's user to pass through.
func newCluster(bin, base string) (*Cluster, error) {
	c := &Cluster{bin: bin}
	uid, gid := os.Getuid(), os.Getgid()
	if uid == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			return nil, fmt.Errorf("%w: %v", errNoServerUser, err)
		}
		uid, _ = strconv.Atoi(u.Uid)
		gid, _ = strconv.Atoi(u.Gid)
		c.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	}
	// base's parent (t.TempDir's, say) is private to the caller's user; the
	// server's user must be able to pass through it.
	if c.cred != nil {
		if err := os.Chmod(filepath.Dir(base), 0o711); err != nil {
			return nil, err
		}
		if err := os.Chown(base, uid, gid); err != nil {
			return nil, err
		}
	}
	c.Dir = filepath.Join(base, "data")
	c.log = filepath.Join(base, "server.log")
	port, err := localserver.FreePort()
	if err != nil {
		return nil, err
	}
	c.Port = port
	return c, nil
}

// initdb is the command that makes a cluster in dir: user postgres, trusted.
func initdb(dir string) []string {
	return []string{"initdb", "-D", dir, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync"}
}

// Create makes a new cluster with initdb in base/data (see newCluster), with
// the server's binaries in bin (BinDir); Launch starts it.
func Create(bin, base string) (*Cluster, error) {
	c, err := newCluster(bin, base)
	if err != nil {
		return nil, err
	}
	if err := c.exec(initdb(c.Dir)...); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *Cluster) start(t localserver.TB) {
	t.Helper()
	if err := c.Launch(context.Background()); err != nil {
		t.Fatalf("pgcluster: %v\n%s", err, c.Log())
	}
	t.Cleanup(c.Stop)
}

// Launch starts the cluster, listening on 127.0.0.1 only (no Unix socket)
// with fsync off, and returns once it accepts connections; the caller stops
// it (Stop). A server that started but accepts no connection within 30 s is
// stopped again.
func (c *Cluster) Launch(ctx context.Context) error {
	if err := c.appendConf(fmt.Sprintf("port = %d\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = ''\nfsync = off\n", c.Port)); err != nil {
		return err
	}
	if err := c.exec("pg_ctl", "-D", c.Dir, "-l", c.log, "-w", "-t", "60", "start"); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		conn, err := pgx.Connect(ctx, c.URL("postgres"))
		if err == nil {
			conn.Close(ctx)
			return nil
		}
		if ctx.Err() != nil {
			c.Stop()
			return fmt.Errorf("server on port %d does not accept connections: %w", c.Port, err)
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

// StopCommand is the shell command that stops the server the way Stop does,
// as the server's user, for a cluster left running (the demo's --keep).
func (c *Cluster) StopCommand() string {
	cmd := fmt.Sprintf("%s -D %s -m fast -w stop", shellQuote(filepath.Join(c.bin, "pg_ctl")), shellQuote(c.Dir))
	if c.cred != nil {
		cmd = "runuser -u postgres -- " + cmd
	}
	return cmd
}

// shellQuote quotes s for a POSIX shell when it needs quoting.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./@:=,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
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
func (c *Cluster) WaitReplayed(t localserver.TB, primary *Cluster) {
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
func (c *Cluster) Exec(t localserver.TB, database, sql string) {
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

// run runs one of the server's programs (name, then its arguments) as the
// server's user, failing the test if it fails.
func (c *Cluster) run(t localserver.TB, command ...string) {
	t.Helper()
	if err := c.exec(command...); err != nil {
		t.Fatalf("pgcluster: %v\n%s", err, c.Log())
	}
}

// exec runs one of the server's programs (name, then its arguments) as the
// server's user, in the directory above the data directory.
func (c *Cluster) exec(command ...string) error {
	name, args := command[0], command[1:]
	cmd := exec.Command(filepath.Join(c.bin, name), args...)
	cmd.Dir = filepath.Dir(c.Dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args, " "), err, out)
	}
	return nil
}

// appendConf adds lines to the cluster's postgresql.conf.
func (c *Cluster) appendConf(lines string) error {
	f, err := os.OpenFile(filepath.Join(c.Dir, "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err == nil {
		_, err = f.WriteString("\n" + lines)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		return fmt.Errorf("write postgresql.conf: %w", err)
	}
	return nil
}

func (c *Cluster) writeOwned(t localserver.TB, path, body string) {
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
