package config

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lock-reaper/lock-reaper/internal/redisserver"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/internal/testing/testenv"
)

// TestDiscreteSettingsConnect: URLs that point nowhere, corrected by the
// discrete settings, reach the real PostgreSQL and the claimed Redis
// database.
func TestDiscreteSettingsConnect(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	real, err := url.Parse(testenv.DatabaseURL())
	require.NoError(t, err)
	c := Default()
	c.Database.URL = "postgres://nobody@127.0.0.1:1/nowhere?connect_timeout=5"
	c.Database.Host, c.Database.Port = real.Hostname(), real.Port()
	if c.Database.Port == "" {
		c.Database.Port = "5432"
	}
	c.Database.Name = strings.TrimPrefix(real.Path, "/")
	c.Database.User = real.User.Username()
	if pw, ok := real.User.Password(); ok {
		c.Database.Password = pw
	}
	pc, err := PoolConfig(c)
	require.NoError(t, err)
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	require.NoError(t, err)
	defer pool.Close()
	var db, user string
	require.NoError(t, pool.QueryRow(ctx, "SELECT current_database(), current_user").Scan(&db, &user))
	require.Equal(t, c.Database.Name, db)
	require.Equal(t, c.Database.User, user)

	r := testenv.NewRedis(t)
	addr := r.Client.Options().Addr
	host, port, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	c = Default()
	c.Redis.URL = "redis://127.0.0.1:1/0"
	c.Redis.Host, c.Redis.Port, c.Redis.DB = host, port, strconv.Itoa(r.DB)
	c.Redis.Password = r.Client.Options().Password
	rdb, err := NewRedisClient(c)
	require.NoError(t, err)
	defer rdb.Close()
	key := "lock-reaper:test:discrete"
	require.NoError(t, rdb.Set(ctx, key, "here", time.Minute).Err())
	got, err := r.Client.Get(ctx, key).Result()
	require.NoError(t, err, "the key lands in the claimed database")
	require.Equal(t, "here", got)
}

// TestRedisTLSFiles runs against a real redis-server that speaks only TLS
// and demands client certificates: the CA file makes its certificate
// verify, the client certificate gets in, and each missing piece is refused.
func TestRedisTLSFiles(t *testing.T) {
	t.Parallel()
	pki := newTestPKI(t)
	port := startTLSRedis(t, pki)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	ping := func(c Config) error {
		t.Helper()
		require.NoError(t, c.Validate())
		rdb, err := NewRedisClient(c)
		require.NoError(t, err)
		defer rdb.Close()
		return rdb.Ping(ctx).Err()
	}
	c := Default()
	c.Pass.RedisTimeout = 5 * time.Second
	c.Redis.URL = fmt.Sprintf("rediss://127.0.0.1:%d/0", port)
	c.Redis.TLSCAFile, c.Redis.TLSCertFile, c.Redis.TLSKeyFile = pki.CA, pki.ClientCert, pki.ClientKey
	require.NoError(t, ping(c))

	// redis.host replaces the URL's host, and the name verified with it.
	named := c
	named.Redis.URL = fmt.Sprintf("rediss://wrong.invalid:%d/0", port)
	named.Redis.Host = "localhost"
	require.NoError(t, ping(named))

	noCert := c
	noCert.Redis.TLSCertFile, noCert.Redis.TLSKeyFile = "", ""
	require.Error(t, ping(noCert), "the server demands a client certificate")

	noCA := c
	noCA.Redis.TLSCAFile = ""
	err := ping(noCA)
	require.Error(t, err, "the system's CAs do not know the test CA")
	require.Contains(t, err.Error(), "certificate")
}

// startTLSRedis starts a redis-server on a free loopback port that speaks
// only TLS and requires client certificates from pki's CA.
func startTLSRedis(t *testing.T, pki testPKI) int {
	t.Helper()
	return redisserver.StartTLS(t, pki.ServerCert, pki.ServerKey, pki.CA, "--tls-auth-clients", "yes")
}
