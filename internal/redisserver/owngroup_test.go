//go:build unix

package redisserver

import (
	"strconv"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/internal/localserver"
)

// A server launched in its own process group leads it: a Ctrl-C sent to
// the group of the program that started it does not reach it.
func TestLaunchOwnGroup(t *testing.T) {
	bin := localserver.Require(t, "redis-server", "Debian: apt-get install redis-server")
	port := localserver.MustFreePort(t)
	cmd, _, err := LaunchOwnGroup(bin, t.TempDir(), "--port", strconv.Itoa(port))
	require.NoError(t, err)
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	pgid, err := syscall.Getpgid(cmd.Process.Pid)
	require.NoError(t, err)
	require.Equal(t, cmd.Process.Pid, pgid, "the server leads a group of its own")
	require.NotEqual(t, syscall.Getpgrp(), pgid, "not the test's group")
}
