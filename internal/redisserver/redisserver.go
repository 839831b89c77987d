// Package redisserver starts a throwaway redis-server for a test that needs a
// server configured differently from the shared one (an eviction policy, no
// persistence, a replica, ACL users): on a free loopback port, with its files
// in t.TempDir(), stopped at cleanup. Tests never change the configuration of
// a server they did not start. Launch, which starts the server, also serves
// the demo's own servers (internal/throwaway).
package redisserver

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lock-reaper/lock-reaper/internal/localserver"
)

// Server is a running test-started redis-server.
type Server struct {
	// Addr is host:port on the loopback interface.
	Addr string
	Port int
	// Client talks to database 0 as the default user.
	Client *redis.Client
	cmd    *exec.Cmd
	args   []string
}

// Kill ends the server at once, as a crash would (SIGKILL: nothing is
// saved, nothing more is sent to its replicas), and waits until it has
// exited.
func (s *Server) Kill() {
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
}

// Restart kills the server (SIGKILL: without persistence every key is
// lost), waits down, and starts it again on the same port with the same
// arguments, as a Redis pod restarted without a volume. A server started
// with Start only; call it from the test's goroutine.
func (s *Server) Restart(t localserver.TB, down time.Duration) {
	t.Helper()
	s.Kill()
	time.Sleep(down)
	s.cmd = run(t, append([]string{"--port", strconv.Itoa(s.Port)}, s.args...))
}

// URL is the server's redis:// URL for database db.
func (s *Server) URL(db int) string { return fmt.Sprintf("redis://%s/%d", s.Addr, db) }

// Start starts redis-server with extra configuration arguments (for example
// "--maxmemory-policy", "allkeys-lru"), waits until it accepts connections
// and stops it at cleanup. It skips the test when redis-server is not
// installed. Unless args say otherwise, the server neither saves nor logs
// to a file, and its working directory is a fresh t.TempDir().
func Start(t localserver.TB, args ...string) *Server {
	t.Helper()
	port := localserver.MustFreePort(t)
	cmd := run(t, append([]string{"--port", strconv.Itoa(port)}, args...))
	s := &Server{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), Port: port, cmd: cmd, args: args}
	s.Client = redis.NewClient(&redis.Options{Addr: s.Addr})
	t.Cleanup(func() { _ = s.Client.Close() })
	if err := s.Client.Ping(context.Background()).Err(); err != nil {
		t.Fatalf("ping test redis-server on %s: %v", s.Addr, err)
	}
	return s
}

// StartTLS starts redis-server speaking only TLS on a free port, with the
// given PEM files (and extra arguments such as "--tls-auth-clients", "yes"),
// and returns the port. It skips the test when redis-server is missing or
// was built without TLS.
func StartTLS(t localserver.TB, certFile, keyFile, caFile string, args ...string) int {
	t.Helper()
	port := localserver.MustFreePort(t)
	run(t, append([]string{"--port", "0", "--tls-port", strconv.Itoa(port),
		"--tls-cert-file", certFile, "--tls-key-file", keyFile, "--tls-ca-cert-file", caFile}, args...))
	return port
}

// run starts redis-server with args after the defaults, waits until it is
// ready and stops it at cleanup.
func run(t localserver.TB, args []string) *exec.Cmd {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server not found: this test needs a Redis server of its own")
	}
	cmd, log, err := Launch(bin, t.TempDir(), args...)
	if err != nil {
		if strings.Contains(strings.ToLower(log), "tls") {
			t.Skipf("redis-server has no TLS support: %s", log)
		}
		t.Fatalf("redis-server %v: %v", args, err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd
}

// Launch starts the redis-server at bin in directory dir with args after
// the defaults (loopback only, no saving, no log file) and returns once it
// is ready to accept connections. The caller stops it (kill, then Wait). A
// server that never gets ready is killed; log is then what it wrote, and
// says why.
func Launch(bin, dir string, args ...string) (cmd *exec.Cmd, log string, err error) {
	return launch(bin, dir, func(*exec.Cmd) {}, discardLog, args...)
}

// LaunchOwnGroup is Launch, with the server in a process group of its own:
// a Ctrl-C at the terminal does not reach it, so a program can keep it
// running past its own interruption (the demo's --keep).
func LaunchOwnGroup(bin, dir string, args ...string) (cmd *exec.Cmd, log string, err error) {
	return launch(bin, dir, setOwnGroup, discardLog, args...)
}

// discardLog reads the rest of a server's log, so that it never blocks on
// a full pipe.
func discardLog(out io.Reader) { _, _ = io.Copy(io.Discard, out) }

// launch is Launch, with prepare applied to the command before it starts.
func launch(bin, dir string, prepare func(*exec.Cmd), drain func(io.Reader), args ...string) (cmd *exec.Cmd, log string, err error) {
	full := append([]string{"--bind", "127.0.0.1", "--dir", dir,
		"--save", "", "--appendonly", "no", "--logfile", ""}, args...)
	cmd = exec.Command(bin, full...)
	prepare(cmd)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, "", err
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		return nil, "", err
	}
	if log, ok := waitReady(out, readyLine, 30*time.Second, drain); !ok {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, log, fmt.Errorf("it did not start:\n%s", log)
	}
	return cmd, "", nil
}

// readyLine is what redis-server logs once it accepts connections.
const readyLine = "Ready to accept connections"

// waitReady reads the server's log until a line contains ready, then hands
// the rest to drain in the background.
func waitReady(out io.Reader, ready string, timeout time.Duration, drain func(io.Reader)) (string, bool) {
	type result struct {
		log string
		ok  bool
	}
	done := make(chan result, 1)
	go func() {
		var log strings.Builder
		lines := bufio.NewScanner(out)
		for lines.Scan() {
			log.WriteString(lines.Text() + "\n")
			if strings.Contains(lines.Text(), ready) {
				done <- result{log.String(), true}
				drain(out)
				return
			}
		}
		done <- result{log.String(), false}
	}()
	select {
	case r := <-done:
		return r.log, r.ok
	case <-time.After(timeout):
		return fmt.Sprintf("timed out waiting for %q", ready), false
	}
}

// ReplicaOf starts a second server replicating primary and waits until the
// link is up.
func ReplicaOf(t localserver.TB, primary *Server, args ...string) *Server {
	t.Helper()
	return ReplicaVia(t, primary.Addr, args...)
}

// ReplicaVia starts a second server replicating the primary reached at addr
// (host:port: the primary itself, or a proxy in front of it, so that a test
// can break the link) and waits until the link is up.
func ReplicaVia(t localserver.TB, addr string, args ...string) *Server {
	t.Helper()
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatalf("replica of %q: %v", addr, err)
	}
	replica := Start(t, append([]string{"--replicaof", host, port}, args...)...)
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		info, err := replica.Client.Info(context.Background(), "replication").Result()
		if err == nil && strings.Contains(info, "master_link_status:up") {
			return replica
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("replica on %s never linked to its primary on %s", replica.Addr, addr)
	return nil
}
