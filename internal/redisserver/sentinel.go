package redisserver

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lock-reaper/lock-reaper/internal/localserver"
)

// Sentinel is a running test-started Redis Sentinel watching one primary.
type Sentinel struct {
	// Addr is host:port on the loopback interface.
	Addr string
	// Master is the name the primary is watched under.
	Master string
	// Client talks to the Sentinel itself.
	Client *redis.SentinelClient
}

// StartSentinel starts a Sentinel (redis-server --sentinel) on a free port
// that watches primary under the name master with a quorum of one, so that
// it alone fails over: it deems the primary down after downAfter without an
// answer. It is stopped at cleanup. Replicas a failover should reach must
// not have been disconnected from their primary for more than ten times
// downAfter (Sentinel passes over them).
func StartSentinel(t localserver.TB, primary *Server, master string, downAfter time.Duration) *Sentinel {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server not found: this test needs a Redis Sentinel of its own")
	}
	port := localserver.MustFreePort(t)
	dir := t.TempDir()
	// A Sentinel rewrites its configuration file: it must be its own. A
	// long failover-timeout keeps it from setting a replica's primary
	// back while a test holds the replica off.
	conf := fmt.Sprintf("port %d\nbind 127.0.0.1\ndir %s\nlogfile \"\"\n"+
		"sentinel monitor %s 127.0.0.1 %d 1\nsentinel down-after-milliseconds %s %d\nsentinel failover-timeout %s 600000\n",
		port, dir, master, primary.Port, master, downAfter.Milliseconds(), master)
	file := filepath.Join(dir, "sentinel.conf")
	if err := os.WriteFile(file, []byte(conf), 0o600); err != nil {
		t.Fatalf("write the Sentinel's configuration: %v", err)
	}
	cmd := exec.Command(bin, file, "--sentinel")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatalf("redis-server --sentinel: %v", err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatalf("redis-server --sentinel: %v", err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	if log, ok := waitReady(out, "+monitor master "+master, 30*time.Second, discardLog); !ok {
		t.Fatalf("redis-server --sentinel did not start:\n%s", log)
	}
	s := &Sentinel{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), Master: master}
	s.Client = redis.NewSentinelClient(&redis.Options{Addr: s.Addr})
	t.Cleanup(func() { _ = s.Client.Close() })
	return s
}

// URL is lock-reaper's redis+sentinel:// URL for database db of the
// primary this Sentinel watches.
func (s *Sentinel) URL(db int) string {
	return fmt.Sprintf("redis+sentinel://%s/%d?master_name=%s", s.Addr, db, s.Master)
}

// AwaitPrimary waits until the Sentinel names want as the primary and want
// says it is one (ROLE), as after a failover.
func (s *Sentinel) AwaitPrimary(t localserver.TB, want *Server) {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		addr, err := s.Client.GetMasterAddrByName(ctx, s.Master).Result()
		if err == nil && len(addr) == 2 && net.JoinHostPort(addr[0], addr[1]) == want.Addr {
			role, err := want.Client.Do(ctx, "ROLE").Slice()
			if err == nil && len(role) > 0 && role[0] == "master" {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("the Sentinel on %s never named %s the primary of %s", s.Addr, want.Addr, s.Master)
}
