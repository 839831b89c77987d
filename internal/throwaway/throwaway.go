// Package throwaway starts a Redis server and a PostgreSQL cluster of the
// program's own, in a new temporary directory, on free loopback ports, for
// the demo: it then never needs a server someone else runs, and whatever a
// REAPER_* variable points at stays untouched. Stop removes both and the
// directory.
package throwaway

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// Servers are the running Redis server and PostgreSQL cluster.
type Servers struct {
	RedisURL    string // database 0 of the throwaway Redis
	DatabaseURL string // database postgres of the throwaway cluster, as user postgres
	dir         string
	redis       *exec.Cmd
	pgBin       string
	pgData      string
	cred        *syscall.Credential
}

// Start starts both servers, or says which binary is missing and how to get it.
func Start(ctx context.Context) (*Servers, error) {
	redisBin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, errors.New("redis-server not found (Debian: apt-get install redis-server)")
	}
	pgBin, ok := postgresBinDir()
	if !ok {
		return nil, errors.New("PostgreSQL server binaries (initdb, pg_ctl, postgres) not found in /usr/lib/postgresql/*/bin (Debian: apt-get install postgresql)")
	}
	dir, err := os.MkdirTemp("", "lock-reaper-demo-")
	if err != nil {
		return nil, err
	}
	s := &Servers{dir: dir, pgBin: pgBin}
	if err := s.startRedis(redisBin); err != nil {
		s.Stop()
		return nil, fmt.Errorf("start a throwaway redis-server: %w", err)
	}
	if err := s.startPostgres(ctx); err != nil {
		s.Stop()
		return nil, fmt.Errorf("start a throwaway PostgreSQL in %s: %w", dir, err)
	}
	return s, nil
}

func (s *Servers) startRedis(bin string) error {
	port, err := freePort()
	if err != nil {
		return err
	}
	rdir := filepath.Join(s.dir, "redis")
	if err := os.Mkdir(rdir, 0o700); err != nil {
		return err
	}
	cmd := exec.Command(bin, "--bind", "127.0.0.1", "--port", strconv.Itoa(port), "--dir", rdir,
		"--save", "", "--appendonly", "no", "--logfile", "")
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		return err
	}
	s.redis = cmd
	if log, ok := waitRedisReady(out, 30*time.Second); !ok {
		return fmt.Errorf("it did not start:\n%s", log)
	}
	s.RedisURL = fmt.Sprintf("redis://127.0.0.1:%d/0", port)
	return nil
}

// startPostgres runs initdb and pg_ctl as the user the server may run as:
// postgres when the program runs as root, since the server refuses root.
func (s *Servers) startPostgres(ctx context.Context) error {
	if os.Getuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			return fmt.Errorf("running as root and there is no postgres user to run the server as: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		s.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chmod(s.dir, 0o711); err != nil {
			return err
		}
	}
	base := filepath.Join(s.dir, "postgres")
	if err := os.Mkdir(base, 0o700); err != nil {
		return err
	}
	if s.cred != nil {
		if err := os.Chown(base, int(s.cred.Uid), int(s.cred.Gid)); err != nil {
			return err
		}
	}
	s.pgData = filepath.Join(base, "data")
	if err := s.pg("initdb", "-D", s.pgData, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync"); err != nil {
		return err
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	opts := fmt.Sprintf("-p %d -c listen_addresses=127.0.0.1 -c unix_socket_directories='' -c fsync=off", port)
	if err := s.pg("pg_ctl", "-D", s.pgData, "-l", filepath.Join(base, "server.log"), "-o", opts, "-w", "-t", "60", "start"); err != nil {
		s.pgData = ""
		return err
	}
	s.DatabaseURL = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port)
	deadline := time.Now().Add(30 * time.Second)
	for {
		conn, err := pgx.Connect(ctx, s.DatabaseURL)
		if err == nil {
			return conn.Close(ctx)
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("the server does not accept connections: %w", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (s *Servers) pg(name string, args ...string) error {
	cmd := exec.Command(filepath.Join(s.pgBin, name), args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s: %w\n%s", name, err, out)
	}
	return nil
}

// Stop stops both servers and removes their directory; stopping twice is harmless.
func (s *Servers) Stop() {
	if s.pgData != "" {
		_ = s.pg("pg_ctl", "-D", s.pgData, "-m", "immediate", "-w", "stop")
		s.pgData = ""
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

func postgresBinDir() (string, bool) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) < version(dirs[j]) })
	for i := len(dirs) - 1; i >= 0; i-- {
		ok := true
		for _, name := range []string{"initdb", "pg_ctl", "postgres"} {
			if _, err := os.Stat(filepath.Join(dirs[i], name)); err != nil {
				ok = false
			}
		}
		if ok {
			return dirs[i], true
		}
	}
	return "", false
}

// version is the major version in /usr/lib/postgresql/<major>/bin.
func version(dir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(dir)))
	return n
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// waitRedisReady reads the server's log until it is ready, then drains it
// in the background so that the server never blocks on a full pipe.
func waitRedisReady(out io.Reader, timeout time.Duration) (string, bool) {
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
			if strings.Contains(lines.Text(), "Ready to accept connections") {
				done <- result{log.String(), true}
				_, _ = io.Copy(io.Discard, out)
				return
			}
		}
		done <- result{log.String(), false}
	}()
	select {
	case r := <-done:
		return r.log, r.ok
	case <-time.After(timeout):
		return "timed out waiting for \"Ready to accept connections\"", false
	}
}
