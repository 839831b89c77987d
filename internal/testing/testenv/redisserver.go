package testenv

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync"

	"github.com/lock-reaper/lock-reaper/internal/localserver"
	"github.com/lock-reaper/lock-reaper/internal/redisserver"
)

// RedisServer is a redis-server this process started: on a free loopback
// port, in its own temporary directory, saving nothing to disk. It holds
// nobody's data but the tests', so tests may use any of its databases.
type RedisServer struct {
	URL    string
	Port   int
	server *redisserver.Bound
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
	port, err := localserver.FreePort()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "lock-reaper-test-redis-")
	if err != nil {
		return nil, err
	}
	// The server saves nothing, so its directory stays empty: it goes once
	// the server is up, so that not even a killed test run leaves it behind.
	defer os.RemoveAll(dir)
	b, _, err := redisserver.LaunchBound(bin, dir, "--port", strconv.Itoa(port),
		"--databases", "16", "--protected-mode", "yes")
	if err != nil {
		return nil, fmt.Errorf("start redis-server on 127.0.0.1:%d: %w", port, err)
	}
	return &RedisServer{Port: port, URL: fmt.Sprintf("redis://127.0.0.1:%d/0", port), server: b}, nil
}

// Stop ends the server.
func (s *RedisServer) Stop() { s.server.Stop() }

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
