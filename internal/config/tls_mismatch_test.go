package config

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/internal/redisserver"
)

// TestRedisTLSMismatchNamed: a redis.url whose scheme does not match the
// server fails naming TLS and the scheme to use, against real servers: a
// rediss:// URL to a plain redis-server (which would read the handshake as
// an unfinished command and leave the client waiting out its deadline), and
// a redis:// URL to one that speaks only TLS (which closes the connection).
// The deadline is long, so that only an error that names the mismatch,
// not the deadline, passes.
func TestRedisTLSMismatchNamed(t *testing.T) {
	t.Parallel()
	pki := newTestPKI(t)
	tlsPort := startTLSRedis(t, pki)
	plain := redisserver.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ping := func(url, caFile string) error {
		t.Helper()
		c := Default()
		c.Pass.RedisTimeout = 45 * time.Second
		c.Redis.URL, c.Redis.TLSCAFile = url, caFile
		require.NoError(t, c.Validate())
		rdb, err := NewRedisClient(c)
		require.NoError(t, err)
		defer rdb.Close()
		return rdb.Ping(ctx).Err()
	}

	err := ping(fmt.Sprintf("rediss://%s/0", plain.Addr), pki.CA)
	require.Error(t, err)
	require.Contains(t, err.Error(), "the server at "+plain.Addr+" did not answer a TLS handshake and speaks plain Redis: use a redis:// (or redis+sentinel://) redis.url")

	addr := fmt.Sprintf("127.0.0.1:%d", tlsPort)
	err = ping("redis://"+addr+"/0", "")
	require.Error(t, err)
	require.Contains(t, err.Error(), "the server at "+addr+" speaks TLS: use a rediss:// (or rediss+sentinel://) redis.url")

	// A Sentinel URL is dialed alike: its Sentinels first.
	err = ping(fmt.Sprintf("rediss+sentinel://%s/0?master_name=pulp", plain.Addr), pki.CA)
	require.Error(t, err)
	require.Contains(t, err.Error(), "the server at "+plain.Addr+" did not answer a TLS handshake")
	err = ping("redis+sentinel://"+addr+"/0?master_name=pulp", "")
	require.Error(t, err)
	require.Contains(t, err.Error(), "the server at "+addr+" speaks TLS")

	// The matching schemes still connect.
	require.NoError(t, ping(fmt.Sprintf("redis://%s/0", plain.Addr), ""))
}
