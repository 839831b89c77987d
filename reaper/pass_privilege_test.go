package reaper_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
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

	"github.com/lock-reaper/lock-reaper/internal/exitcode"
	"github.com/lock-reaper/lock-reaper/internal/redisserver"
	"github.com/lock-reaper/lock-reaper/reaper/judge"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/internal/cli"
	"github.com/lock-reaper/lock-reaper/internal/config"
	"github.com/lock-reaper/lock-reaper/internal/privilege"
	"github.com/lock-reaper/lock-reaper/internal/pulpschema"
	"github.com/lock-reaper/lock-reaper/internal/sim"
	"github.com/lock-reaper/lock-reaper/internal/testing/testenv"
	"github.com/lock-reaper/lock-reaper/reaper"
	"github.com/lock-reaper/lock-reaper/reaper/history"
)

// The privilege tests run lock-reaper as an operator would, through its
// command line, under exactly the PostgreSQL role and Redis ACL user of
// internal/privilege (which the documentation quotes), and check that no
// password of a DSN ever reaches its output.

// pvSecret is a random password, easy to grep for.
func pvSecret(prefix string) string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return prefix + "Secret" + hex.EncodeToString(b)
}

// pvRun calls the command line with only the given environment.
func pvRun(t *testing.T, env map[string]string, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := cli.Main(context.Background(), cli.Env{
		Args: args, Stdout: &stdout, Stderr: &stderr, Version: "test",
		LookupEnv: testenv.LookupEnv(env),
	})
	return code, stdout.String(), stderr.String()
}

// pvRestricted is a database role and a Redis ACL user with exactly the
// documented privileges, and the URLs that log in as them.
type pvRestricted struct {
	role, roleSecret   string
	user, userSecret   string
	redisURL, database string
}

func pvRestrict(t *testing.T, r *testenv.Redis, db *testenv.Database) *pvRestricted {
	t.Helper()
	ctx := context.Background()
	p := &pvRestricted{role: strings.ToLower(pvSecret("lr_role_")), roleSecret: pvSecret("pg"), userSecret: pvSecret("redis")}
	p.user = "lr-user-" + p.role[len(p.role)-8:]

	_, err := db.Pool.Exec(ctx, privilege.PostgresSQLFor(p.role, p.roleSecret))
	require.NoError(t, err)
	t.Cleanup(func() {
		// Roles are cluster-wide: revoke what it holds in this database, then drop it.
		ctx := context.Background()
		_, _ = db.Pool.Exec(ctx, "DROP OWNED BY "+pgx.Identifier{p.role}.Sanitize())
		_, _ = db.Pool.Exec(ctx, "DROP ROLE IF EXISTS "+pgx.Identifier{p.role}.Sanitize())
	})
	require.NoError(t, r.Client.Do(ctx, privilege.RedisSetUser(p.user, p.userSecret)...).Err())
	t.Cleanup(func() { _ = r.Client.Do(context.Background(), "ACL", "DELUSER", p.user).Err() })

	ru, err := url.Parse(r.URL)
	require.NoError(t, err)
	ru.User = url.UserPassword(p.user, p.userSecret)
	p.redisURL = ru.String()
	du, err := url.Parse(db.URL)
	require.NoError(t, err)
	du.User = url.UserPassword(p.role, p.roleSecret)
	p.database = du.String()
	return p
}

// pvDenied lists the ACL log entries of user: a command or key the ACL
// refused, even one the client shrugged off (go-redis ignores a refused
// CLIENT SETINFO).
func pvDenied(t *testing.T, r *testenv.Redis, user string) []string {
	t.Helper()
	entries, err := r.Client.Do(context.Background(), "ACL", "LOG").Slice()
	require.NoError(t, err)
	var denied []string
	for _, e := range entries {
		fields, ok := e.(map[any]any)
		if !ok {
			continue
		}
		// go-redis announces its library with CLIENT SETINFO (Redis 7.2 and
		// later) and goes on without it when refused; the rules leave it out.
		if fields["username"] == user && fields["object"] != "client|setinfo" {
			denied = append(denied, fmt.Sprintf("%v %v %v", fields["reason"], fields["context"], fields["object"]))
		}
	}
	return denied
}

// TestLeastPrivilegePasses runs audit and real passes, with releases, task
// updates and confirmed suspects, under exactly the documented role and ACL
// user, and checks that those privileges allow nothing much beyond.
func TestLeastPrivilegePasses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r, db := testenv.NewRedis(t), testenv.NewDatabase(t)
	spec := sim.IncidentSpec{
		DeadTaskLocks: 24, DeadResourceLocks: 20, DeadRunning: 4, DeadClaimed: 4, DeadUnclaimed: 2, DeadMissing: 2,
		LegacyFraction: 0.25, LiveWorkers: 3, QueuedTasks: 6,
	}
	inc, err := sim.BuildIncident(ctx, r.Client, db.Pool, spec)
	require.NoError(t, err)
	defer inc.KeepAliveInBackground(ctx, db.Pool)() // error dropped: ends with the test
	// A live worker holding a resource without a task: a suspect, then a
	// confirmed release, so that suspects are written, read and settled.
	orphan := judge.ResourceKeyPrefix + sim.RepositoryPRN(sim.NewUUID())
	require.NoError(t, r.Client.Set(ctx, orphan, inc.LiveOwners[0], 0).Err())

	p := pvRestrict(t, r, db)
	env := map[string]string{
		"REAPER_REDIS_URL": p.redisURL, "REAPER_DATABASE_URL": p.database,
		"REAPER_LOG_FORMAT": "json", "REAPER_LOG_LEVEL": "debug", "REAPER_CONFIRM_AFTER": "0s",
	}
	var outputs []string
	run := func(want int, args ...string) reaper.Report {
		t.Helper()
		code, stdout, stderr := pvRun(t, env, args...)
		outputs = append(outputs, stdout, stderr)
		require.Equal(t, want, code, "%v\nstdout: %s\nstderr: %s", args, stdout, stderr)
		var rep reaper.Report
		require.NoError(t, json.Unmarshal([]byte(stdout), &rep))
		require.Empty(t, rep.Error)
		return rep
	}

	audit := run(exitcode.Findings, "audit", "--output", "json")
	require.Len(t, audit.Findings, len(inc.Stale)+1)

	// explain reads the task's row and the older waiting tasks before it,
	// in Pulp's fetch order (pulp_created).
	for _, id := range []string{inc.Queued[0], inc.Queued[len(inc.Queued)-1]} {
		code, stdout, stderr := pvRun(t, env, "explain", id, "--output", "json")
		outputs = append(outputs, stdout, stderr)
		require.Equal(t, exitcode.OK, code, "explain %s\nstdout: %s\nstderr: %s", id, stdout, stderr)
	}

	// Without its cached copy the release script goes by EVAL; every client
	// that runs scripts through go-redis falls back the same way.
	require.NoError(t, r.Client.ScriptFlush(ctx).Err())
	once := run(exitcode.OK, "once", "--output", "json")
	require.Equal(t, len(inc.Stale), once.Summary.Released)
	require.Equal(t, len(inc.Cancel)+len(inc.Requeue), once.Summary.TasksUpdated)
	require.Equal(t, 1, once.Summary.Suspects)

	once = run(exitcode.OK, "once", "--output", "json")
	require.Equal(t, 1, once.Summary.Released, "the suspect, confirmed")
	holdings, err := sim.ScanHoldings(ctx, r.Client)
	require.NoError(t, err)
	require.ElementsMatch(t, inc.Healthy, holdings)
	run(exitcode.OK, "audit", "--output", "json")
	require.Empty(t, pvDenied(t, r, p.user), "the ACL refused something a pass sent")
	passes, err := history.Recent(ctx, r.Client, history.DefaultPrefix, time.Time{}, 0)
	require.NoError(t, err)
	require.Len(t, passes, 2, "both once passes are in the history, the audits not")

	// Nothing much beyond: other columns, other statements, other keys.
	conn, err := pgx.Connect(ctx, p.database)
	require.NoError(t, err)
	defer conn.Close(ctx)
	for _, sql := range []string{
		"SELECT enc_args FROM core_task", "SELECT pulp_created FROM core_appstatus", "DELETE FROM core_task",
		"UPDATE core_task SET name = 'x'", "INSERT INTO core_appstatus (pulp_id, app_type, name, ttl) VALUES (gen_random_uuid(), 'worker', 'x', '1s')",
		"SELECT 1 FROM core_domain", "UPDATE core_appstatus SET last_heartbeat = now()",
	} {
		_, err := conn.Exec(ctx, sql)
		require.ErrorContains(t, err, "permission denied", sql)
	}
	limited := redis.NewClient(&redis.Options{Addr: r.Client.Options().Addr, DB: r.DB, Username: p.user, Password: p.userSecret})
	defer limited.Close()
	read, err := history.Read(ctx, limited, history.DefaultPrefix, time.Time{}, 10)
	require.NoError(t, err, "the page reads the history, each entry's length first")
	require.Len(t, read.Entries, 2)
	for _, cmd := range [][]any{{"SET", "task:x", "y"}, {"FLUSHDB"}, {"KEYS", "*"}, {"GET", "other:key"}, {"CONFIG", "GET", "*"}, {"SET", "pulp:resource_lock:x", "y"}, {"SET", "pulp:task:cancel:x", "cancel"}, {"SETEX", "other:key", "1", "y"}} {
		require.ErrorContains(t, limited.Do(ctx, cmd...).Err(), "NOPERM", "%v", cmd)
	}

	for _, out := range outputs {
		require.NotContains(t, out, p.roleSecret)
		require.NotContains(t, out, p.userSecret)
	}
}

// TestSecretsNeverPrinted: passwords in redis.url and database.url (and in
// their _FILE forms) never appear in `config` output, in reports, in logs or
// in error messages, whether the pass works, cannot connect, or the URL is
// malformed.
func TestSecretsNeverPrinted(t *testing.T) {
	t.Parallel()
	r, db := testenv.NewRedis(t), testenv.NewDatabase(t)
	p := pvRestrict(t, r, db)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closed := ln.Addr().(*net.TCPAddr).Port
	require.NoError(t, ln.Close())
	unreachableDB := "postgres://" + p.role + ":" + p.roleSecret + "@127.0.0.1:" + strconv.Itoa(closed) + "/x?connect_timeout=2"
	unreachableRedis := "redis://" + p.user + ":" + p.userSecret + "@127.0.0.1:" + strconv.Itoa(closed) + "/0"
	wrongRedisPassword := strings.Replace(p.redisURL, p.userSecret, p.userSecret+"x", 1)

	cases := []struct {
		name string
		env  map[string]string
		args []string
		want int
	}{
		{"config", map[string]string{"REAPER_REDIS_URL": p.redisURL, "REAPER_DATABASE_URL": p.database}, []string{"config"}, exitcode.OK},
		{"audit text", map[string]string{"REAPER_REDIS_URL": p.redisURL, "REAPER_DATABASE_URL": p.database, "REAPER_LOG_LEVEL": "debug"}, []string{"audit"}, exitcode.OK},
		{"once json", map[string]string{"REAPER_REDIS_URL": p.redisURL, "REAPER_DATABASE_URL": p.database, "REAPER_LOG_FORMAT": "json", "REAPER_LOG_LEVEL": "debug"}, []string{"once", "--output", "json"}, exitcode.OK},
		{"database unreachable", map[string]string{"REAPER_REDIS_URL": p.redisURL, "REAPER_DATABASE_URL": unreachableDB, "REAPER_LOG_LEVEL": "debug"}, []string{"once", "--output", "json"}, exitcode.Failed},
		{"redis unreachable", map[string]string{"REAPER_REDIS_URL": unreachableRedis, "REAPER_DATABASE_URL": p.database, "REAPER_REDIS_TIMEOUT": "1s"}, []string{"once"}, exitcode.Failed},
		{"redis password wrong", map[string]string{"REAPER_REDIS_URL": wrongRedisPassword, "REAPER_DATABASE_URL": p.database}, []string{"audit", "--output", "json"}, exitcode.Usage},
		{"bad database url", map[string]string{"REAPER_DATABASE_URL": "postgres://u:" + p.roleSecret + "@host:99999999/db"}, []string{"once"}, exitcode.Usage},
		{"bad redis url", map[string]string{"REAPER_REDIS_URL": "redis://u:" + p.userSecret + "@host:port/x"}, []string{"audit"}, exitcode.Usage},
		{"flags", nil, []string{"config", "--redis-url", p.redisURL, "--database-url", p.database}, exitcode.OK},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, stdout, stderr := pvRun(t, c.env, c.args...)
			require.Equal(t, c.want, code, "stdout: %s\nstderr: %s", stdout, stderr)
			for _, out := range []string{stdout, stderr} {
				require.NotContains(t, out, p.roleSecret)
				require.NotContains(t, out, p.userSecret)
			}
		})
	}
}

// pvCA is a throwaway certificate authority.
type pvCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func pvNewCA(t *testing.T, name string) *pvCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	return &pvCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// issue signs a server certificate for localhost and 127.0.0.1.
func (ca *pvCA) issue(t *testing.T) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "localhost"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	require.NoError(t, err)
	keyDER, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
}

func (ca *pvCA) pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.cert)
	return p
}

func pvFreePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func pvWriteFile(t *testing.T, path string, data []byte, mode os.FileMode) string {
	t.Helper()
	require.NoError(t, os.WriteFile(path, data, mode))
	return path
}

// pvStartTLSRedis starts a redis-server that speaks only TLS, on a free port,
// and returns the port; it skips the test when redis-server lacks TLS.
func pvStartTLSRedis(t *testing.T, dir string, certPEM, keyPEM, caPEM []byte) int {
	t.Helper()
	return redisserver.StartTLS(t,
		pvWriteFile(t, filepath.Join(dir, "redis.crt"), certPEM, 0o600),
		pvWriteFile(t, filepath.Join(dir, "redis.key"), keyPEM, 0o600),
		pvWriteFile(t, filepath.Join(dir, "redis-ca.crt"), caPEM, 0o600),
		"--tls-auth-clients", "no")
}

// pvStartTLSPostgres starts a throwaway PostgreSQL cluster with ssl on and
// the given certificate, on a free port, and returns the port; zero when no
// PostgreSQL server binaries are installed.
func pvStartTLSPostgres(t *testing.T, certPEM, keyPEM []byte) int {
	t.Helper()
	bins, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	if len(bins) == 0 {
		return 0
	}
	sort.Strings(bins)
	binDir := filepath.Dir(bins[len(bins)-1])
	// The server refuses to run as root: run it as the postgres user then.
	var cred *syscall.Credential
	uid, gid := os.Getuid(), os.Getgid()
	if uid == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			return 0
		}
		uid, _ = strconv.Atoi(u.Uid)
		gid, _ = strconv.Atoi(u.Gid)
		cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	}
	base, err := os.MkdirTemp("", "lock-reaper-tls-pg-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(base) })
	require.NoError(t, os.Chown(base, uid, gid))
	run := func(name string, args ...string) {
		cmd := exec.Command(filepath.Join(binDir, name), args...)
		cmd.Dir = base
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s: %s", name, out)
	}
	data := filepath.Join(base, "data")
	run("initdb", "-D", data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync")
	for name, body := range map[string][]byte{"server.crt": certPEM, "server.key": keyPEM} {
		path := pvWriteFile(t, filepath.Join(data, name), body, 0o600)
		require.NoError(t, os.Chown(path, uid, gid))
	}
	port := pvFreePort(t)
	conf := fmt.Sprintf("\nport = %d\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = '%s'\nssl = on\nfsync = off\n", port, base)
	f, err := os.OpenFile(filepath.Join(data, "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString(conf)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	run("pg_ctl", "-D", data, "-l", filepath.Join(base, "server.log"), "-w", "-t", "60", "start")
	t.Cleanup(func() {
		cmd := exec.Command(filepath.Join(binDir, "pg_ctl"), "-D", data, "-m", "immediate", "-w", "stop")
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		_ = cmd.Run()
	})
	return port
}

// TestTLS runs a pass against Redis over TLS (rediss://) and PostgreSQL with
// sslmode=verify-full, each with a certificate from a throwaway CA, and
// checks that a server whose certificate does not verify is refused.
func TestTLS(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	ca, stranger := pvNewCA(t, "lock-reaper test CA"), pvNewCA(t, "someone else's CA")
	certPEM, keyPEM := ca.issue(t)
	caFile := pvWriteFile(t, filepath.Join(dir, "ca.crt"), ca.pem, 0o600)
	strangerFile := pvWriteFile(t, filepath.Join(dir, "stranger.crt"), stranger.pem, 0o600)

	redisPort := pvStartTLSRedis(t, dir, certPEM, keyPEM, ca.pem)
	cfg := config.Default()
	cfg.Redis.URL = fmt.Sprintf("rediss://localhost:%d/0", redisPort)
	cfg.Pass.RedisTimeout = 5 * time.Second
	// redis.url has no CA setting: operators add theirs to the system's trust
	// store (or SSL_CERT_FILE). The test trusts its CA in the client config
	// built from the URL, which is otherwise what production builds.
	redisClient := func(roots *x509.CertPool) redis.UniversalClient {
		rdb, err := config.NewRedisClient(cfg)
		require.NoError(t, err)
		t.Cleanup(func() { _ = rdb.Close() })
		tlsCfg := rdb.(*redis.Client).Options().TLSConfig
		require.NotNil(t, tlsCfg, "rediss:// speaks TLS")
		tlsCfg.RootCAs = roots
		return rdb
	}
	rdb := redisClient(ca.pool())
	require.NoError(t, rdb.Ping(ctx).Err())
	require.ErrorContains(t, redisClient(stranger.pool()).Ping(ctx).Err(), "certificate", "a certificate from another CA is refused")
	plain := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", redisPort), MaxRetries: -1})
	defer plain.Close()
	require.Error(t, plain.Ping(ctx).Err(), "the server speaks TLS only")

	pgPort := pvStartTLSPostgres(t, certPEM, keyPEM)
	var pgURL string
	if pgPort == 0 {
		// No server binaries for a throwaway cluster: at least check that
		// the system server, when it has ssl on, is reached over TLS.
		db := testenv.NewDatabase(t)
		var ssl string
		require.NoError(t, db.Pool.QueryRow(ctx, "SHOW ssl").Scan(&ssl))
		if ssl != "on" {
			t.Skip("no PostgreSQL server binaries and the test server has ssl off: TLS to PostgreSQL not tested")
		}
		u, err := url.Parse(db.URL)
		require.NoError(t, err)
		q := u.Query()
		q.Set("sslmode", "require")
		u.RawQuery = q.Encode()
		pgURL = u.String()
		t.Log("no PostgreSQL server binaries: testing sslmode=require against the test server instead of verify-full")
	} else {
		pgURL = fmt.Sprintf("postgres://postgres@localhost:%d/postgres?sslmode=verify-full&sslrootcert=%s", pgPort, caFile)
		bad := fmt.Sprintf("postgres://postgres@localhost:%d/postgres?sslmode=verify-full&sslrootcert=%s&connect_timeout=5", pgPort, strangerFile)
		_, err := pgx.Connect(ctx, bad)
		require.ErrorContains(t, err, "certificate", "a certificate from another CA is refused")
	}
	cfg.Database.URL = pgURL
	cfg.Pass.DatabaseTimeout = 10 * time.Second
	pc, err := config.PoolConfig(cfg)
	require.NoError(t, err)
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	require.NoError(t, err)
	defer pool.Close()
	var overTLS bool
	require.NoError(t, pool.QueryRow(ctx, "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()").Scan(&overTLS))
	require.True(t, overTLS)
	if pgPort != 0 {
		_, err = pool.Exec(ctx, pulpschema.SQL)
		require.NoError(t, err)
	}

	// One dead worker's running task and its lock, beside live workers.
	dead, task := sim.NewUUID(), sim.NewUUID()
	_, err = pool.Exec(ctx, `INSERT INTO core_appstatus (pulp_id, app_type, name, ttl, last_heartbeat)
		VALUES ($1, 'worker', '1@tls-dead', '30 seconds', now() - interval '1 hour')`, dead)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `INSERT INTO core_task (pulp_id, state, name, app_lock_id, pulp_domain_id)
		VALUES ($1, 'running', 'tls.task', $2, '00000000-0000-4000-8000-000000000001')`, task, dead)
	require.NoError(t, err)
	require.NoError(t, rdb.Set(ctx, judge.TaskKeyPrefix+task, "1@tls-dead", 0).Err())
	t.Cleanup(func() { _ = rdb.Del(context.Background(), judge.TaskKeyPrefix+task).Err() })

	r, err := reaper.New(cfg.Pass, rdb, pool, nil)
	require.NoError(t, err)
	rep, err := r.RunOnce(ctx, reaper.Options{Mode: reaper.ModeOnce})
	require.NoError(t, err)
	require.Empty(t, rep.Skipped)
	require.Equal(t, 1, rep.Summary.Released)
	require.Equal(t, 1, rep.Summary.TasksUpdated)
	require.Zero(t, rdb.Exists(ctx, judge.TaskKeyPrefix+task).Val())
}

// TestACLWithoutMGETReadsTheSame: a user created for a version before the
// reader used MGET still gets the whole snapshot, by GET, and one warning
// naming the fix.
func TestACLWithoutMGETReadsTheSame(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r, db := testenv.NewRedis(t), testenv.NewDatabase(t)
	spec := sim.IncidentSpec{DeadTaskLocks: 12, DeadResourceLocks: 10, DeadRunning: 2, LegacyFraction: 0.25, LiveWorkers: 2}
	inc, err := sim.BuildIncident(ctx, r.Client, db.Pool, spec)
	require.NoError(t, err)
	defer inc.KeepAliveInBackground(ctx, db.Pool)() // error dropped: ends with the test

	p := pvRestrict(t, r, db)
	env := map[string]string{"REAPER_REDIS_URL": p.redisURL, "REAPER_DATABASE_URL": p.database, "REAPER_LOG_FORMAT": "json"}
	audit := func() (reaper.Report, string) {
		t.Helper()
		code, stdout, stderr := pvRun(t, env, "audit", "--output", "json")
		require.Equal(t, exitcode.Findings, code, "stdout: %s\nstderr: %s", stdout, stderr)
		var rep reaper.Report
		require.NoError(t, json.Unmarshal([]byte(stdout), &rep))
		return rep, stderr
	}
	withMGET, logs := audit()
	require.NotContains(t, logs, "MGET")
	require.Len(t, withMGET.Findings, len(inc.Stale))
	require.Equal(t, len(inc.Stale)+len(inc.Healthy), withMGET.Scanned.TaskLocks+withMGET.Scanned.ResourceHoldings)

	require.NoError(t, r.Client.Do(ctx, "ACL", "SETUSER", p.user, "-mget").Err())
	withoutMGET, logs := audit()
	require.Equal(t, 1, strings.Count(logs, "add +mget to its ACL"), logs)
	verdicts := func(rep reaper.Report) []string {
		var out []string
		for _, f := range rep.Findings {
			out = append(out, f.Key+" "+f.Owner+" "+f.Verdict.String())
		}
		return out
	}
	require.Equal(t, verdicts(withMGET), verdicts(withoutMGET))
	require.Equal(t, withMGET.Scanned, withoutMGET.Scanned)
}
