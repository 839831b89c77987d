package main

import (
	"context"
	"fmt"
	"math"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lock-reaper/lock-reaper/internal/redisserver"
	"github.com/lock-reaper/lock-reaper/internal/sim"
	"github.com/lock-reaper/lock-reaper/reaper"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
	"github.com/lock-reaper/lock-reaper/reaper/redislocks"
)

// slowlogThreshold is the SLOWLOG threshold of the benchmark's own Redis: a
// pass makes hundreds of thousands of commands (those its scripts call
// included), and only the long ones matter.
const slowlogThreshold = 100 * time.Microsecond

// LongestCommand is the longest single Redis command of one real pass over
// the dead-owner fleet, as the SLOWLOG of a Redis the benchmark started
// records it (commands called by a script are logged apart, and the script
// call with them).
type LongestCommand struct {
	Case string `json:"case"`
	// StaleHoldings are the holdings the pass releases.
	StaleHoldings int `json:"stale_holdings"`
	// StaleRegistry is the number of stale entries (of task keys that are
	// gone) added to the owner's registry before the pass.
	StaleRegistry int     `json:"stale_registry_entries"`
	PassMS        float64 `json:"pass_ms"`
	// Logged counts the commands that took slowlogThreshold or more.
	Logged     int     `json:"commands_over_threshold"`
	ThresholdU int64   `json:"threshold_us"`
	LongestUS  int64   `json:"longest_us"`
	Command    string  `json:"command"`
	SecondUS   int64   `json:"second_longest_us"`
	Second     string  `json:"second_command"`
	TotalMS    float64 `json:"logged_total_ms"`
	// RegistryWalkUS is, with stale registry entries, one walk of the
	// owner's whole registry in one script call (SSCAN pages of COUNT 1000
	// until the cursor comes back), on the same server just before the
	// pass: what the release script did before its walks were bounded, the
	// baseline the pass's longest command is a part of. RegistryWalked is
	// the entries it walked.
	RegistryWalkUS int64 `json:"registry_walk_us,omitempty"`
	RegistryWalked int64 `json:"registry_walked_entries,omitempty"`
}

// measureLongestCommands runs a real pass over a fresh dead-owner fleet on a
// redis-server of its own with the SLOWLOG recording every command over
// slowlogThreshold, once as built and, with -stale-registry, once more with
// that many stale entries in the owner's registry (the pass prunes them
// first), and reports the longest command of each.
func measureLongestCommands(ctx context.Context, o options, logf func(string, ...any)) ([]LongestCommand, error) {
	cases := []int{0}
	if o.staleRegistry > 0 {
		cases = append(cases, o.staleRegistry)
	}
	var out []LongestCommand
	for _, stale := range cases {
		lc, err := measureLongestCommand(ctx, o, stale, logf)
		if err != nil {
			return nil, err
		}
		out = append(out, lc)
	}
	return out, nil
}

func measureLongestCommand(ctx context.Context, o options, stale int, logf func(string, ...any)) (LongestCommand, error) {
	lc := LongestCommand{Case: "dead owner, tasks running", StaleRegistry: stale, ThresholdU: slowlogThreshold.Microseconds()}
	if o.shape == shapeFinished {
		lc.Case = "live owner, tasks finished"
	}
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return lc, fmt.Errorf("the longest command is measured on a redis-server of the benchmark's own: %w", err)
	}
	dir, err := os.MkdirTemp("", "lr-bench-redis-")
	if err != nil {
		return lc, err
	}
	defer os.RemoveAll(dir)
	port, err := freeLoopbackPort()
	if err != nil {
		return lc, err
	}
	srv, log, err := redisserver.Launch(bin, dir, "--port", strconv.Itoa(port),
		"--slowlog-log-slower-than", strconv.FormatInt(slowlogThreshold.Microseconds(), 10), "--slowlog-max-len", "1000000")
	if err != nil {
		return lc, fmt.Errorf("start redis-server: %w\n%s", err, log)
	}
	defer func() { _ = srv.Process.Kill(); _ = srv.Wait() }()
	rdb := redis.NewClient(&redis.Options{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port))})
	defer rdb.Close()

	pool, _, drop, err := benchDatabase(ctx, o.databaseURL)
	if err != nil {
		return lc, err
	}
	defer drop()

	spec := deadOwnerSpec(o)
	m, err := sim.BuildFleet(ctx, rdb, pool, spec)
	if err != nil {
		return lc, fmt.Errorf("build fleet: %w", err)
	}
	beat, stop := context.WithCancel(ctx)
	defer stop()
	go func() { _ = m.KeepAlive(beat, pool) }()
	for _, owner := range m.Owners {
		if err := addStaleEntries(ctx, rdb, owner, stale); err != nil {
			return lc, err
		}
	}
	lc.StaleHoldings = m.StaleHoldings
	logf("longest command: %d stale holdings, %d stale registry entries of %s", m.StaleHoldings, stale, strings.Join(m.Owners, ", "))

	cfg := reaper.DefaultConfig()
	cfg.HeartbeatRecheck = benchRecheck
	cfg.ScanCount, cfg.BatchSize = o.scanCount, o.batchSize
	cfg.MaxReleases, cfg.MaxTaskUpdates = math.MaxInt32, math.MaxInt32
	r, err := reaper.New(cfg, rdb, pool, nil)
	if err != nil {
		return lc, err
	}
	if stale > 0 {
		if lc.RegistryWalked, lc.RegistryWalkUS, err = walkRegistryWhole(ctx, rdb, m.Owners[0]); err != nil {
			return lc, err
		}
	}
	if err := rdb.SlowLogReset(ctx).Err(); err != nil {
		return lc, err
	}
	start := time.Now()
	rep, err := r.RunOnce(ctx, reaper.Options{Mode: reaper.ModeOnce})
	lc.PassMS = float64(time.Since(start).Microseconds()) / 1000
	if err != nil {
		return lc, fmt.Errorf("pass: %w", err)
	}
	if rep.Summary.Released != m.StaleHoldings {
		return lc, fmt.Errorf("pass released %d holdings, the fleet has %d stale", rep.Summary.Released, m.StaleHoldings)
	}
	entries, err := rdb.SlowLogGet(ctx, -1).Result()
	if err != nil {
		return lc, err
	}
	lc.Logged = len(entries)
	var longest, second redis.SlowLog
	for _, e := range entries {
		lc.TotalMS += float64(e.Duration.Microseconds()) / 1000
		switch {
		case e.Duration > longest.Duration:
			longest, second = e, longest
		case e.Duration > second.Duration:
			second = e
		}
	}
	lc.LongestUS, lc.Command = longest.Duration.Microseconds(), describeCommand(longest.Args)
	lc.SecondUS, lc.Second = second.Duration.Microseconds(), describeCommand(second.Args)
	for _, owner := range m.Owners {
		if n := rdb.Exists(ctx, redislocks.OwnerLocksPrefix+owner).Val(); n != 0 && stale > 0 && o.shape != shapeFinished {
			return lc, fmt.Errorf("the dead owner's registry is left after the pass")
		}
	}
	logf("longest command: pass %.0f ms, %d commands over %v, the longest %d µs: %s", lc.PassMS, lc.Logged, slowlogThreshold, lc.LongestUS, lc.Command)
	return lc, nil
}

// registryWalkScript walks a registry whole in one call, as the release
// script's new-task check did before its walks were bounded (in pages a
// call, and in entries counted), and returns the entries walked.
var registryWalkScript = redis.NewScript(`local c, n = '0', 0
repeat local p = redis.call('SSCAN', KEYS[1], c, 'COUNT', 1000); c, n = p[1], n + #p[2] until c == '0'
return n`)

// walkRegistryWhole walks owner's registry whole in one script call and
// returns the entries it walked and the call's server time, from the
// SLOWLOG (the script's own SSCANs are logged apart, and only the call
// counts).
func walkRegistryWhole(ctx context.Context, rdb *redis.Client, owner string) (walked, us int64, err error) {
	if err := registryWalkScript.Load(ctx, rdb).Err(); err != nil {
		return 0, 0, fmt.Errorf("load the registry walk: %w", err)
	}
	if err := rdb.SlowLogReset(ctx).Err(); err != nil {
		return 0, 0, err
	}
	if walked, err = registryWalkScript.Run(ctx, rdb, []string{redislocks.OwnerLocksPrefix + owner}).Int64(); err != nil {
		return 0, 0, fmt.Errorf("walk the registry of %s: %w", owner, err)
	}
	entries, err := rdb.SlowLogGet(ctx, -1).Result()
	if err != nil {
		return 0, 0, err
	}
	for _, e := range entries {
		if len(e.Args) > 1 && strings.EqualFold(e.Args[0], "evalsha") && e.Args[1] == registryWalkScript.Hash() {
			return walked, e.Duration.Microseconds(), nil
		}
	}
	return walked, 0, fmt.Errorf("the registry walk of %s is not in the SLOWLOG: it took less than %v", owner, slowlogThreshold)
}

// addStaleEntries adds n entries of task keys that do not exist to owner's
// registry, as a plain DEL of the locks leaves them.
func addStaleEntries(ctx context.Context, rdb *redis.Client, owner string, n int) error {
	for start := 0; start < n; start += 10_000 {
		batch := make([]any, 0, 10_000)
		for i := start; i < min(start+10_000, n); i++ {
			batch = append(batch, fmt.Sprintf("%sstale-%s-%07d", judge.TaskKeyPrefix, owner, i))
		}
		if err := rdb.SAdd(ctx, redislocks.OwnerLocksPrefix+owner, batch...).Err(); err != nil {
			return fmt.Errorf("add stale registry entries: %w", err)
		}
	}
	return nil
}

// describeCommand renders a SLOWLOG entry's arguments, a script's text and
// long arguments cut short.
func describeCommand(args []string) string {
	var b strings.Builder
	for i, a := range args {
		if i == 6 {
			fmt.Fprintf(&b, " … (%d arguments)", len(args))
			break
		}
		a = strings.Join(strings.Fields(a), " ")
		if len(a) > 24 {
			a = a[:24] + "…"
		}
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(a)
	}
	return b.String()
}

func freeLoopbackPort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// writeLongestMarkdown is the table of the longest commands.
func writeLongestMarkdown(b *strings.Builder, runs []LongestCommand) {
	if len(runs) == 0 {
		return
	}
	b.WriteString("\nLongest single Redis command of one real pass (SLOWLOG of a Redis the benchmark started):\n\n")
	b.WriteString("| case | stale holdings | stale registry entries | pass | commands ≥ threshold | longest | command | next longest | one walk of the registry (entries) | longest ÷ walk |\n|---|---:|---:|---:|---:|---:|---|---:|---:|---:|\n")
	for _, r := range runs {
		walk, ratio := "", ""
		if r.RegistryWalkUS > 0 {
			walk = fmt.Sprintf("%s µs (%s)", thousands(r.RegistryWalkUS), thousands(r.RegistryWalked))
			ratio = fmt.Sprintf("%.3f", float64(r.LongestUS)/float64(r.RegistryWalkUS))
		}
		fmt.Fprintf(b, "| %s | %s | %s | %.1f s | %s (≥ %d µs) | %s µs | `%s` | %s µs | %s | %s |\n", r.Case, thousands(int64(r.StaleHoldings)), thousands(int64(r.StaleRegistry)), r.PassMS/1000,
			thousands(int64(r.Logged)), r.ThresholdU, thousands(r.LongestUS), strings.ReplaceAll(r.Command, "`", "'"), thousands(r.SecondUS), walk, ratio)
	}
}
