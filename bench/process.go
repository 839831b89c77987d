package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/lock-reaper/lock-reaper/internal/memlimit"
)

// ProcessRun is one run of the real binary, measured from outside.
type ProcessRun struct {
	Name    string `json:"name"`
	Command string `json:"command"`
	// GoMemLimit is the child's GOMEMLIMIT, in bytes ("": none).
	GoMemLimit string `json:"gomemlimit,omitempty"`
	// ContainerLimit is the child's REAPER_MEMORY_LIMIT, in bytes ("":
	// none), from which it sets its own soft limit, SoftLimitBytes.
	ContainerLimit string `json:"container_memory_limit,omitempty"`
	SoftLimitBytes int64  `json:"soft_limit_bytes,omitempty"`
	// PeakRSSBytes is the child's maximum resident set size, VmHWM of
	// /proc/PID/status. Not getrusage's ru_maxrss: Go starts a child with
	// CLONE_VM, and at exec Linux records the parent's memory, shared until
	// then, as the child's high-water mark.
	PeakRSSBytes int64 `json:"peak_rss_bytes"`
	// PeakAnonBytes is the largest RssAnon read (memoryPeaks.anon).
	PeakAnonBytes int64   `json:"peak_anon_bytes"`
	WallMS        float64 `json:"wall_ms"`
	StdoutBytes   int64   `json:"stdout_bytes"`
	StdoutLines   int     `json:"stdout_lines"`
	// LogLines counts the JSON log lines on stderr; every one must parse.
	LogLines int `json:"log_lines"`
	ExitCode int `json:"exit_code"`
	// CPUShare is the share of one CPU the run was held to (0: not held).
	CPUShare float64 `json:"cpu_share,omitempty"`
	// Pages is what the status page answered while the run was measured
	// (nil: no page was fetched).
	Pages *PageFetches `json:"pages,omitempty"`
	// ForeignHistory counts the entries of 2 MB written into the history
	// of passes by someone else before the run.
	ForeignHistory int `json:"foreign_history_entries,omitempty"`
	// ShippedLimits says max_releases and max_task_updates were left as
	// shipped (else lifted, so that one pass does everything).
	ShippedLimits bool `json:"shipped_limits,omitempty"`
}

// processCase is one command line to measure.
type processCase struct {
	name string
	args []string
	// exit is the exit code a correct pass gives on the fleet.
	exit int
	// real passes write, json ones print the JSON report.
	real, json bool
	// memLimit is the child's GOMEMLIMIT ("": none).
	memLimit string
	// containerLimit is the child's REAPER_MEMORY_LIMIT ("": none), what
	// the chart sets from the container's memory limit.
	containerLimit string
	// limit names the memory limit the case is measured under.
	limit string
	// runFor is how long a long-running command (run, status) is measured
	// before SIGTERM stops it; 0 for a command that ends by itself.
	runFor time.Duration
	// banner is the start of a line for people the command writes on
	// stderr before its JSON log (status: where the page is served).
	banner string
	// cpuShare, when set, holds the child to that share of one CPU
	// (throttle), as a container's CPU limit does.
	cpuShare float64
	// pages fetches the status page's pages through the run (fetchPages).
	pages bool
	// foreignHistory is how many entries of 2 MB someone else wrote into
	// the history of passes before the run (writeForeignHistory).
	foreignHistory int
	// shippedLimits leaves max_releases and max_task_updates as shipped:
	// a pass then leaves work for the next, and the fleet is not all
	// reaped when the run ends.
	shippedLimits bool
}

// run starts `lock-reaper ARGS` against the fleet with only the settings it
// needs in its environment, and measures it.
func (c processCase) run(ctx context.Context, bin string, f *fleetEnv, logf func(string, ...any)) (ProcessRun, error) {
	dir, err := os.MkdirTemp("", "lr-bench-run-")
	if err != nil {
		return ProcessRun{}, err
	}
	defer os.RemoveAll(dir)
	stdout, err := os.Create(filepath.Join(dir, "stdout"))
	if err != nil {
		return ProcessRun{}, err
	}
	defer stdout.Close()
	stderr, err := os.Create(filepath.Join(dir, "stderr"))
	if err != nil {
		return ProcessRun{}, err
	}
	defer stderr.Close()

	redisURL, err := claimedRedisURL(f.e.redisURL, f.e.claim.DB)
	if err != nil {
		return ProcessRun{}, err
	}
	cmd := exec.CommandContext(ctx, bin, c.args...)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.Env = []string{
		"REAPER_REDIS_URL=" + redisURL,
		"REAPER_DATABASE_URL=" + f.e.databaseURL,
		"REAPER_LOG_FORMAT=json",
		"REAPER_HEARTBEAT_RECHECK=" + benchRecheck.String(),
	}
	if !c.shippedLimits {
		cmd.Env = append(cmd.Env, "REAPER_MAX_RELEASES="+maxInt32Text, "REAPER_MAX_TASK_UPDATES="+maxInt32Text)
	}
	if c.memLimit != "" {
		cmd.Env = append(cmd.Env, "GOMEMLIMIT="+c.memLimit)
	}
	if c.containerLimit != "" {
		cmd.Env = append(cmd.Env, memlimit.Env+"="+c.containerLimit)
	}
	if c.cpuShare > 0 {
		cmd.Env = append(cmd.Env, "GOMAXPROCS=1")
	}
	if c.foreignHistory > 0 {
		remove, err := writeForeignHistory(ctx, f.rdb, c.foreignHistory)
		if err != nil {
			return ProcessRun{}, err
		}
		defer remove()
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return ProcessRun{}, fmt.Errorf("start %s: %w", bin, err)
	}
	hwm := watchHighWaterMark(cmd.Process.Pid)
	stopSpan, stopThrottle, stopPages := func() {}, func() {}, func() PageFetches { return PageFetches{} }
	if c.pages {
		// Fetched until SIGTERM: the daemon then stops serving while its
		// pass ends.
		stopPages = fetchPages(ctx, c.runFor, stderr.Name(), f.someTask(ctx), logf)
	}
	if c.runFor > 0 {
		stopSpan = stopAfter(ctx, cmd, c.runFor)
	}
	if c.cpuShare > 0 {
		stopThrottle = throttle(cmd.Process, c.cpuShare)
	}
	err = cmd.Wait()
	stopThrottle()
	stopSpan()
	pages := stopPages()
	wall := time.Since(start)
	peak := hwm()
	var exitErr *exec.ExitError
	if err != nil && !errors.As(err, &exitErr) {
		return ProcessRun{}, fmt.Errorf("run %s: %w", bin, err)
	}
	run := ProcessRun{Name: c.name, Command: "lock-reaper " + strings.Join(c.args, " "), GoMemLimit: c.memLimit, ContainerLimit: c.containerLimit,
		WallMS: float64(wall.Microseconds()) / 1000, ExitCode: cmd.ProcessState.ExitCode(), PeakRSSBytes: peak.hwm, PeakAnonBytes: peak.anon, CPUShare: c.cpuShare, ForeignHistory: c.foreignHistory,
		ShippedLimits: c.shippedLimits}
	if c.pages {
		run.Pages = &pages
		logf("%-40s pages: %d rounds, %d fetched, %d refreshing (503), %d failed, largest %s (%d bytes)", c.name, pages.Rounds, pages.Fetched,
			pages.Refreshing, pages.Failed, pages.LargestPage, pages.LargestBytes)
	}
	setting, err := c.softLimit()
	if err != nil {
		return run, err
	}
	run.SoftLimitBytes = setting.Soft
	out, err := os.ReadFile(stdout.Name())
	if err != nil {
		return run, err
	}
	run.StdoutBytes, run.StdoutLines = int64(len(out)), bytes.Count(out, []byte("\n"))
	if run.LogLines, err = countJSONLines(stderr.Name(), c.banner); err != nil {
		return run, err
	}
	logf("%-40s peak RSS %s (anonymous %s), %.1f s, stdout %s in %d lines, %d log lines, exit %d", c.name, mib(uint64(run.PeakRSSBytes)),
		mib(uint64(run.PeakAnonBytes)), wall.Seconds(),
		mib(uint64(run.StdoutBytes)), run.StdoutLines, run.LogLines, run.ExitCode)
	if run.ExitCode != c.exit {
		return run, fmt.Errorf("exit code %d, want %d; stderr ends: %s", run.ExitCode, c.exit, tail(stderr.Name()))
	}
	if c.json {
		if err := checkJSONReport(out, c, f.manifest); err != nil {
			return run, err
		}
	}
	return run, nil
}

// softLimit is the soft memory limit the child sets itself, as
// internal/memlimit chooses it from the child's environment and cgroup.
func (c processCase) softLimit() (memlimit.Setting, error) {
	env := map[string]string{"GOMEMLIMIT": c.memLimit, memlimit.Env: c.containerLimit}
	return memlimit.Choose(func(k string) (string, bool) { v := env[k]; return v, v != "" }, os.ReadFile)
}

// countJSONLines counts the lines of a JSON log and fails on any line that
// is not a JSON object: a log collector must be able to read every one.
func countJSONLines(path string, banner string) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 0, 64<<10), 16<<20)
	n := 0
	for s.Scan() {
		if banner != "" && n == 0 && strings.HasPrefix(s.Text(), banner) {
			continue
		}
		n++
		var obj map[string]any
		if err := json.Unmarshal(s.Bytes(), &obj); err != nil {
			return n, fmt.Errorf("log line %d is not JSON: %q", n, s.Text())
		}
	}
	return n, s.Err()
}

func tail(path string) string {
	b, _ := os.ReadFile(path)
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}

// claimedRedisURL is the benchmark's Redis URL pointed at the claimed
// logical database, for the child's configuration.
func claimedRedisURL(base string, db int) (string, error) {
	u, err := url.Parse(base)
	if err != nil {
		return "", fmt.Errorf("parse redis url: %w", err)
	}
	u.Path = "/" + strconv.Itoa(db)
	return u.String(), nil
}

// reaperBinary returns the binary to measure: the one given, or the module's
// main package built into a temporary directory as the Dockerfile builds the
// image's: static, without symbols. Its code and data pages count in the
// peak RSS (about 20 MiB of them are resident by the end of a pass); the
// C library of a cgo build would add its own.
func reaperBinary(ctx context.Context, given string) (string, func(), error) {
	if given != "" {
		return given, func() {}, nil
	}
	dir, err := os.MkdirTemp("", "lr-bench-bin-")
	if err != nil {
		return "", nil, err
	}
	cleanup := func() { _ = os.RemoveAll(dir) }
	bin := filepath.Join(dir, "lock-reaper")
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags", "-s -w", "-o", bin, "github.com/lock-reaper/lock-reaper")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		cleanup()
		return "", nil, fmt.Errorf("build lock-reaper: %w: %s", err, out)
	}
	return bin, cleanup, nil
}

// hwmInterval is how often the child's high-water mark is read; VmHWM only
// grows, so a read misses at most what the last interval before the exit
// added.
const hwmInterval = 5 * time.Millisecond

// memoryPeaks are the largest resident sizes read of a child.
type memoryPeaks struct {
	// hwm is VmHWM, all resident memory: the runtime's and the binary's
	// file-backed pages.
	hwm int64
	// anon is the largest RssAnon read: the memory a container's cgroup
	// cannot reclaim by dropping pages it can read again, which is what
	// brings an OOM kill. Sampled, so a peak between two reads is missed.
	anon int64
}

// watchHighWaterMark reads VmHWM and RssAnon of the process until it is
// gone; the returned function stops the watch and gives the largest values
// read.
func watchHighWaterMark(pid int) func() memoryPeaks {
	path := fmt.Sprintf("/proc/%d/status", pid)
	var peak memoryPeaks
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(hwmInterval)
		defer t.Stop()
		for {
			if v, ok := readMemory(path); ok {
				peak.hwm, peak.anon = max(peak.hwm, v.hwm), max(peak.anon, v.anon)
			}
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()
	return func() memoryPeaks {
		close(stop)
		<-done
		return peak
	}
}

// readMemory parses "VmHWM:  123456 kB" and "RssAnon:  1234 kB"; a zombie
// has neither.
func readMemory(path string) (memoryPeaks, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return memoryPeaks{}, false
	}
	var m memoryPeaks
	found := false
	for line := range strings.SplitSeq(string(b), "\n") {
		name, v, ok := strings.Cut(line, ":")
		var into *int64
		switch {
		case !ok:
			continue
		case name == "VmHWM":
			into = &m.hwm
		case name == "RssAnon":
			into = &m.anon
		default:
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
		if err != nil {
			return memoryPeaks{}, false
		}
		*into, found = kb<<10, true
	}
	return m, found && m.hwm > 0
}
