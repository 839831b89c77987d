// Package throwaway starts a Redis server and a PostgreSQL cluster of the
// program's own, in a new temporary directory, on free loopback ports, for
// the demo: it then never needs a server someone else runs, and whatever a
// REAPER_* variable points at stays untouched. Stop removes both and the
// directory.
package throwaway

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"

	"github.com/lock-reaper/lock-reaper/internal/localserver"
	"github.com/lock-reaper/lock-reaper/internal/pgbin"
	"github.com/lock-reaper/lock-reaper/internal/pgcluster"
	"github.com/lock-reaper/lock-reaper/internal/redisserver"
)

// The servers are started by the code that starts the tests' own
// (internal/redisserver, internal/pgcluster), so the demo's are configured as
// theirs are: loopback only, nothing saved or synced.

// Servers are the running Redis server and PostgreSQL cluster.
type Servers struct {
	RedisURL    string // database 0 of the throwaway Redis
	DatabaseURL string // database postgres of the throwaway cluster, as user postgres
	dir         string
	redis       *exec.Cmd
	pg          *pgcluster.Cluster
}

// Start starts both servers, or says which binary is missing and how to get it.
func Start(ctx context.Context) (*Servers, error) {
	redisBin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, errors.New("redis-server not found on PATH: install it (Debian/Ubuntu apt-get install redis-server, RHEL/Fedora dnf install redis, macOS brew install redis)")
	}
	pgBin, err := pgbin.Find(pgbin.UsualPlaces, "initdb", "pg_ctl", "postgres")
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "lock-reaper-demo-")
	if err != nil {
		return nil, err
	}
	s := &Servers{dir: dir}
	if err := s.startRedis(redisBin); err != nil {
		s.Stop()
		return nil, fmt.Errorf("start a throwaway redis-server: %w", err)
	}
	if err := s.startPostgres(ctx, pgBin); err != nil {
		s.Stop()
		return nil, fmt.Errorf("start a throwaway PostgreSQL in %s: %w", dir, err)
	}
	return s, nil
}

func (s *Servers) startRedis(bin string) error {
	port, err := localserver.FreePort()
	if err != nil {
		return err
	}
	rdir := filepath.Join(s.dir, "redis")
	if err := os.Mkdir(rdir, 0o700); err != nil {
		return err
	}
	// Its own process group, as pg_ctl gives PostgreSQL its own session: a
	// Ctrl-C at the demo must leave a kept server running.
	cmd, _, err := redisserver.LaunchOwnGroup(bin, rdir, "--port", strconv.Itoa(port))
	if err != nil {
		return err
	}
	s.redis = cmd
	s.RedisURL = fmt.Sprintf("redis://127.0.0.1:%d/0", port)
	return nil
}

// startPostgres makes and starts a cluster in the directory's postgres/;
// as root, it belongs to user postgres, since the server refuses root.
func (s *Servers) startPostgres(ctx context.Context, bin string) error {
	base := filepath.Join(s.dir, "postgres")
	if err := os.Mkdir(base, 0o700); err != nil {
		return err
	}
	c, err := pgcluster.Create(bin, base)
	if err != nil {
		return err
	}
	if err := c.Launch(ctx); err != nil {
		return err
	}
	s.pg = c
	s.DatabaseURL = c.URL("postgres")
	return nil
}

// Keep leaves both servers running after the program exits and returns the
// shell command that stops them and removes their directory; Stop then does
// nothing.
func (s *Servers) Keep() string {
	remove := fmt.Sprintf("kill %d; %s; rm -rf %s", s.redis.Process.Pid, s.pg.StopCommand(), s.dir)
	s.pg, s.redis, s.dir = nil, nil, ""
	return remove
}

// Stop stops both servers and removes their directory; stopping twice is harmless.
func (s *Servers) Stop() {
	if s.pg != nil {
		s.pg.Stop()
		s.pg = nil
	}
	if s.redis != nil {
		_ = s.redis.Process.Kill()
		_ = s.redis.Wait()
		s.redis = nil
	}
	if s.dir != "" {
		_ = os.RemoveAll(s.dir)
		s.dir = ""
	}
}
