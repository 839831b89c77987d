package doctor

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
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/internal/testenv"
)

// startPgbouncer starts PgBouncer in transaction mode in front of the test
// PostgreSQL server, on a free loopback port, and returns a database URL
// through it for db. It skips the test when pgbouncer is not installed.
func startPgbouncer(t *testing.T, db *testenv.Database) string {
	t.Helper()
	bin, err := exec.LookPath("pgbouncer")
	if err != nil {
		t.Skip("pgbouncer not found: the transaction pooler check is tested on tables only")
	}
	server, err := url.Parse(testenv.DatabaseURL())
	require.NoError(t, err)
	// auth_type any logs every client in as the server URL's user.
	host, port := server.Hostname(), server.Port()
	if port == "" {
		port = "5432"
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	listen := ln.Addr().(*net.TCPAddr).Port
	require.NoError(t, ln.Close())

	dir := t.TempDir()
	ini := filepath.Join(dir, "pgbouncer.ini")
	conf := fmt.Sprintf(`[databases]
* = host=%s port=%s user=%s
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = %d
unix_socket_dir =
auth_type = any
pool_mode = transaction
default_pool_size = 4
ignore_startup_parameters = extra_float_digits
pidfile =
`, host, port, server.User.Username(), listen)
	require.NoError(t, os.WriteFile(ini, []byte(conf), 0o644))
	args := []string{ini}
	// PgBouncer refuses to run as root: it switches to postgres then.
	if os.Getuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Skip("running as root without a postgres user: pgbouncer cannot run")
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		require.NoError(t, os.Chown(dir, uid, gid))
		args = []string{"-u", "postgres", ini}
	}
	cmd := exec.Command(bin, args...)
	out, err := os.Create(filepath.Join(dir, "stderr"))
	require.NoError(t, err)
	cmd.Stdout, cmd.Stderr = out, out
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait(); _ = out.Close() })

	through, err := url.Parse(db.URL)
	require.NoError(t, err)
	through.Host = net.JoinHostPort("127.0.0.1", strconv.Itoa(listen))
	q := through.Query()
	// PgBouncer 1.18 keeps no prepared statements across transactions.
	q.Set("default_query_exec_mode", "simple_protocol")
	through.RawQuery = q.Encode()
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", through.Host, time.Second)
		if err == nil {
			_ = c.Close()
			return through.String()
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(dir, "stderr"))
			t.Fatalf("pgbouncer did not listen on %s: %v\n%s", through.Host, err, log)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestTransactionPooler: behind PgBouncer in transaction mode, session
// state does not stay with the session. With an exec mode that caches no
// statements (simple_protocol here) a pass works through it and the check is
// ok; with pgx's default statement cache it fails and names the fix.
func TestTransactionPooler(t *testing.T) {
	t.Parallel()
	db := testenv.NewDatabase(t)
	through := startPgbouncer(t, db)
	pool, err := pgxpool.New(context.Background(), through)
	require.NoError(t, err)
	t.Cleanup(pool.Close)

	r := runCheck(t, checkPostgresPooler, Target{Postgres: pool})
	require.Equal(t, OK, r.Status, r.Evidence)
	require.Contains(t, r.Evidence, "transaction pooler")

	cfg, err := pgxpool.ParseConfig(through)
	require.NoError(t, err)
	cfg.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeCacheStatement
	cached, err := pgxpool.NewWithConfig(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(cached.Close)
	r = runCheck(t, checkPostgresPooler, Target{Postgres: cached})
	require.Equal(t, Fail, r.Status, r.Evidence)
	require.Contains(t, r.Fix, "database.exec_mode: exec")

	// Everything else still reads through it.
	r = runCheck(t, checkPostgresPrimary, Target{Postgres: pool})
	require.Equal(t, OK, r.Status, r.Evidence)
}
