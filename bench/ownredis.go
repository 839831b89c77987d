package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lock-reaper/lock-reaper/internal/redisserver"
	"github.com/lock-reaper/lock-reaper/reaper/redislocks"
)

// ownRedis is a redis-server the benchmark started for one fleet: nothing
// else talks to it, so its command statistics and its SLOWLOG are the
// measured work's alone, and its SLOWLOG threshold is the benchmark's to
// set (the shared server's configuration is never changed).
type ownRedis struct {
	cmd *exec.Cmd
	dir string
	url string
	rdb *redis.Client
}

// startOwnRedis starts redis-server on a free loopback port with the
// SLOWLOG recording every command over slowlogThreshold.
func startOwnRedis() (*ownRedis, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, fmt.Errorf("the scaling rows run on a redis-server of the benchmark's own: %w", err)
	}
	dir, err := os.MkdirTemp("", "lr-bench-redis-")
	if err != nil {
		return nil, err
	}
	port, err := freeLoopbackPort()
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	srv, log, err := redisserver.Launch(bin, dir, "--port", strconv.Itoa(port),
		"--slowlog-log-slower-than", strconv.FormatInt(slowlogThreshold.Microseconds(), 10), "--slowlog-max-len", "1000000")
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("start redis-server: %w\n%s", err, log)
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	return &ownRedis{cmd: srv, dir: dir, url: "redis://" + addr + "/0", rdb: redis.NewClient(&redis.Options{Addr: addr})}, nil
}

func (s *ownRedis) close() {
	if s == nil {
		return
	}
	_ = s.rdb.Close()
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
	_ = os.RemoveAll(s.dir)
}

// adminCommands are the benchmark's own questions to the server, left out
// of what a phase cost it.
var adminCommands = map[string]bool{"info": true, "slowlog": true, "config": true, "client": true, "hello": true,
	"ping": true, "dbsize": true, "select": true, "command": true}

// commandStat is one command's line of INFO commandstats.
type commandStat struct {
	calls, usec int64
}

// serverStats is a reading of the server's own accounts: CPU time and
// commandstats.
type serverStats struct {
	cpu      time.Duration
	commands map[string]commandStat
}

func readServerStats(ctx context.Context, rdb *redis.Client) (serverStats, error) {
	st := serverStats{commands: map[string]commandStat{}}
	info, err := rdb.Info(ctx, "cpu", "commandstats").Result()
	if err != nil {
		return st, fmt.Errorf("read the server's statistics: %w", err)
	}
	for line := range strings.SplitSeq(info, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok {
			continue
		}
		if k == "used_cpu_user" || k == "used_cpu_sys" {
			f, _ := strconv.ParseFloat(v, 64)
			st.cpu += time.Duration(f * float64(time.Second))
			continue
		}
		name, ok := strings.CutPrefix(k, "cmdstat_")
		if !ok || adminCommands[strings.SplitN(name, "|", 2)[0]] {
			continue
		}
		var cs commandStat
		for field := range strings.SplitSeq(v, ",") {
			if n, ok := strings.CutPrefix(field, "calls="); ok {
				cs.calls, _ = strconv.ParseInt(n, 10, 64)
			}
			if n, ok := strings.CutPrefix(field, "usec="); ok {
				cs.usec, _ = strconv.ParseInt(n, 10, 64)
			}
		}
		st.commands[name] = cs
	}
	return st, nil
}

// CommandLoad is what one command cost the server in a phase.
type CommandLoad struct {
	Command string  `json:"command"`
	Calls   int64   `json:"calls"`
	TotalMS float64 `json:"total_ms"`
	// SlowestUS is the slowest single call the SLOWLOG recorded; 0 when
	// none took slowlogThreshold or more.
	SlowestUS int64 `json:"slowest_us"`
	// OverBound counts the calls over callBound.
	OverBound int `json:"calls_over_bound"`
}

// ServerLoad is what a phase cost the benchmark's own Redis, from its own
// accounts.
type ServerLoad struct {
	// CPUMS is the server's CPU time (INFO cpu): all it did for the phase,
	// reading and writing the sockets included.
	CPUMS float64 `json:"cpu_ms"`
	// CommandsMS sums INFO commandstats' usec: time in commands. A script
	// call's time includes the commands it runs, which count again under
	// their own names: an upper bound of the time in the client's calls.
	CommandsMS float64       `json:"commands_ms"`
	Commands   []CommandLoad `json:"commands"`
	// SlowestUS and Slowest are the slowest call the SLOWLOG recorded. A
	// command a script runs is logged apart too, but never outlasts the
	// script's call, so the slowest is a call the client sent.
	SlowestUS int64  `json:"slowest_us"`
	Slowest   string `json:"slowest"`
	// OverBound counts the client's calls over callBound (the commands
	// scripts run within them apart).
	OverBound int `json:"calls_over_bound"`
	// ReleaseCalls is the release script's calls one by one; nil when the
	// phase called no script.
	ReleaseCalls *ReleaseCalls `json:"release_calls,omitempty"`
}

// callBound is the server time one call may take: Pulp's Redis serves every
// worker, and a pass must not be felt (issue 48).
const callBound = 5 * time.Millisecond

// serverLoad is the difference between two readings and the SLOWLOG read
// since the earlier one was reset, one line per command.
func serverLoad(before, after serverStats, slow []redis.SlowLog) ServerLoad {
	l := ServerLoad{CPUMS: ms(after.cpu - before.cpu)}
	byName := map[string]*CommandLoad{}
	for name, a := range after.commands {
		b := before.commands[name]
		if a.calls == b.calls {
			continue
		}
		c := &CommandLoad{Command: name, Calls: a.calls - b.calls, TotalMS: float64(a.usec-b.usec) / 1000}
		byName[name] = c
		l.CommandsMS += c.TotalMS
	}
	for _, e := range slow {
		if len(e.Args) == 0 || adminCommands[strings.ToLower(e.Args[0])] {
			continue
		}
		name, label := strings.ToLower(e.Args[0]), strings.ToUpper(e.Args[0])
		switch {
		case name == "evalsha" && len(e.Args) > 1:
			label = scriptLabel(e.Args[1])
		case name == "eval":
			// The SLOWLOG keeps 128 bytes of the script's text: not enough
			// to tell which.
			label = "EVAL (a script's first call, which loads it)"
		}
		// A command a script ran is logged apart, with no client address;
		// its time is already in the script's call.
		inScript := strings.HasPrefix(e.ClientAddr, "?")
		key := name
		if inScript {
			key = name + " (in a script)"
		}
		c := byName[key]
		if c == nil {
			c = &CommandLoad{Command: key}
			byName[key] = c
		}
		us := e.Duration.Microseconds()
		c.SlowestUS = max(c.SlowestUS, us)
		if e.Duration > callBound {
			c.OverBound++
		}
		if inScript {
			continue
		}
		if e.Duration > callBound {
			l.OverBound++
		}
		if us > l.SlowestUS {
			l.SlowestUS, l.Slowest = us, label
		}
	}
	var scripts int64
	for _, name := range []string{"eval", "evalsha"} {
		scripts += after.commands[name].calls - before.commands[name].calls
	}
	l.ReleaseCalls = releaseCalls(slow, scripts)
	for _, c := range byName {
		c.TotalMS = round2(c.TotalMS)
		l.Commands = append(l.Commands, *c)
	}
	slices.SortFunc(l.Commands, func(a, b CommandLoad) int { return strings.Compare(a.Command, b.Command) })
	l.CommandsMS = round2(l.CommandsMS)
	return l
}

// scriptLabel names a script call by its SHA: the release script by name,
// the others by the SHA's start.
func scriptLabel(sha string) string {
	if sha == redislocks.ReleaseScriptSHA() {
		return "EVALSHA (release script)"
	}
	return "EVALSHA " + sha[:min(8, len(sha))]
}

// measureServer reads the server's accounts and resets its SLOWLOG, and
// returns the function that gives what happened since.
func (s *ownRedis) measureServer(ctx context.Context) (func() (ServerLoad, error), error) {
	if err := s.rdb.SlowLogReset(ctx).Err(); err != nil {
		return nil, fmt.Errorf("reset the SLOWLOG: %w", err)
	}
	before, err := readServerStats(ctx, s.rdb)
	if err != nil {
		return nil, err
	}
	return func() (ServerLoad, error) {
		after, err := readServerStats(ctx, s.rdb)
		if err != nil {
			return ServerLoad{}, err
		}
		slow, err := s.rdb.SlowLogGet(ctx, -1).Result()
		if err != nil {
			return ServerLoad{}, fmt.Errorf("read the SLOWLOG: %w", err)
		}
		return serverLoad(before, after, slow), nil
	}, nil
}
