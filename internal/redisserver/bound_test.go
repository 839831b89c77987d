package redisserver

import (
	"context"
	"net"
	"runtime"
	"strconv"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/internal/localserver"
)

// A bound server answers once launched, carries the parent-death signal
// where the kernel has one, and is gone once stopped.
func TestLaunchBound(t *testing.T) {
	bin := localserver.Require(t, "redis-server", "Debian: apt-get install redis-server")
	port := localserver.MustFreePort(t)
	b, _, err := LaunchBound(bin, t.TempDir(), "--port", strconv.Itoa(port))
	require.NoError(t, err)
	if runtime.GOOS == "linux" {
		require.NotNil(t, b.Cmd.SysProcAttr)
		require.NotZero(t, b.Cmd.SysProcAttr.Pdeathsig)
	}
	c := redis.NewClient(&redis.Options{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port))})
	defer c.Close()
	require.NoError(t, c.Ping(context.Background()).Err())
	b.Stop()
	select {
	case <-b.Done:
	default:
		t.Fatal("Done still open after Stop")
	}
	require.Error(t, c.Ping(context.Background()).Err())
}

// A server that cannot start says why, and leaves nothing running.
func TestLaunchBoundFailure(t *testing.T) {
	bin := localserver.Require(t, "redis-server", "Debian: apt-get install redis-server")
	_, _, err := LaunchBound(bin, t.TempDir(), "--port", "not-a-port")
	require.Error(t, err)
}
