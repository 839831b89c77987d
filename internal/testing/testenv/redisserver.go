package testenv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lock-reaper/lock-reaper/internal/testtool"
)

// RedisServer is a redis-server this process started: on a free loopback
// port, in its own temporary directory, saving nothing to disk. It holds
// nobody's data but the tests', so tests may use any of its databases.
type RedisServer struct {
	URL  string
	Port int
	cmd  *exec.Cmd
	done chan struct{}
}

// StartRedisServer starts a redis-server for the caller. It stops when Stop
// is called or, on Linux, when this process dies (the server is asked to end
// with its parent, so a crashed test run leaves no server behind).
func StartRedisServer() (*RedisServer, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, errors.New("redis-server is not on PATH: install it (Debian: apt-get install redis-server) " +
			"or set REAPER_TEST_REDIS_URL to a Redis server whose databases 1-15 the tests may claim when empty")
	}
	var lastErr error
	for attempt := 0; attempt < 5; attempt++ {
		s, err := startRedisOnce(bin)
		if err == nil {
			return s, nil
		}
		lastErr = err // most likely the free port was taken meanwhile
	}
	return nil, lastErr
}

func startRedisOnce(bin string) (*RedisServer, error) {
	port, err := testtool.FreePort()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "lock-reaper-test-redis-")
	if err != nil {
		return nil, err
	}
	s := &RedisServer{Port: port, URL: fmt.Sprintf("redis://127.0.0.1:%d/0", port), done: make(chan struct{})}
	log := &limitedBuffer{}
	started := make(chan error, 1)
	// The goroutine that starts the server keeps its OS thread for the
	// server's lifetime: Pdeathsig fires when the starting thread ends.
	go func() {
		runtime.LockOSThread()
		defer close(s.done)
		defer os.RemoveAll(dir)
		s.cmd = exec.Command(bin, "--bind", "127.0.0.1", "--port", strconv.Itoa(port), "--dir", dir,
			"--save", "", "--appendonly", "no", "--databases", "16", "--protected-mode", "yes")
		s.cmd.Stdout, s.cmd.Stderr = log, log
		setParentDeathSignal(s.cmd)
		if err := s.cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		_ = s.cmd.Wait()
	}()
	if err := <-started; err != nil {
		return nil, fmt.Errorf("start redis-server: %w", err)
	}
	client := redis.NewClient(&redis.Options{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port))})
	defer client.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		select {
		case <-s.done:
			return nil, fmt.Errorf("redis-server on 127.0.0.1:%d exited at start: %s", port, log.String())
		default:
		}
		if client.Ping(context.Background()).Err() == nil {
			// The server saves nothing, so its directory stays empty: remove
			// it now, so that not even a killed test run leaves it behind.
			_ = os.Remove(dir)
			return s, nil
		}
		if time.Now().After(deadline) {
			s.Stop()
			return nil, fmt.Errorf("redis-server on 127.0.0.1:%d did not answer PING within 10s: %s", port, log.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Stop ends the server and removes its directory.
func (s *RedisServer) Stop() {
	if s.cmd != nil && s.cmd.Process != nil {
		_ = s.cmd.Process.Kill()
	}
	<-s.done
}

// limitedBuffer keeps the first 64 KiB of the server's log, for errors.
type limitedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if room := 64<<10 - l.buf.Len(); room > 0 {
		l.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (l *limitedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

var (
	ownServerOnce sync.Once
	ownServer     *RedisServer
	ownServerErr  error
)

// processRedisServer is the one redis-server of this test process, started
// on first use.
func processRedisServer() (*RedisServer, error) {
	ownServerOnce.Do(func() { ownServer, ownServerErr = StartRedisServer() })
	return ownServer, ownServerErr
}
