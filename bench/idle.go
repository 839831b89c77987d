package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/lock-reaper/lock-reaper/internal/memlimit"
	"github.com/lock-reaper/lock-reaper/internal/sim"
	"github.com/lock-reaper/lock-reaper/reaper/history"
)

// scenarioIdle is `run` as a sidecar next to each worker, the mode
// multiplied by the fleet's size: a small fleet whose workers all beat, so
// every pass finds nothing, and the process is measured from outside.
const scenarioIdle = "idle"

// Targets of issue 48 for an idle sidecar: its RSS as measured from
// outside before, held there, and its CPU below a thousandth of a core.
const (
	idleRSSTarget       = 31 << 20
	idleMillicoreTarget = 1.0
)

// userHZ is the unit of utime and stime in /proc/PID/stat: USER_HZ, 100 on
// every Linux architecture's user-space ABI.
const userHZ = 100

// IdleResults is what the idle scenario measured.
type IdleResults struct {
	Machine Machine      `json:"machine"`
	Fleet   FleetFigures `json:"fleet"`
	Command string       `json:"command"`
	// Watch says `run` watched the pods of a stand-in API server (-idle-watch);
	// Watches and Lists are the server's count of them.
	Watch   bool    `json:"watch"`
	Watches int     `json:"watches,omitempty"`
	Lists   int     `json:"lists,omitempty"`
	SpanS   float64 `json:"span_seconds"`
	// WarmS is the start of the run left out of the steady figures: the
	// start-up and the first pass.
	WarmS float64 `json:"warm_up_seconds"`
	// CPUSeconds is utime + stime over the whole run, SteadyCPUSeconds
	// after the warm-up; the millicores are those over the time they cover.
	CPUSeconds       float64      `json:"cpu_seconds"`
	SteadyCPUSeconds float64      `json:"steady_cpu_seconds"`
	Millicores       float64      `json:"millicores"`
	SteadyMillicores float64      `json:"steady_millicores"`
	MillicoreTarget  float64      `json:"millicore_target"`
	PeakRSSBytes     int64        `json:"peak_rss_bytes"`
	SteadyRSSBytes   int64        `json:"steady_rss_bytes"`
	SteadyAnonBytes  int64        `json:"steady_anon_bytes"`
	LastRSSBytes     int64        `json:"last_rss_bytes"`
	RSSTargetBytes   int64        `json:"rss_target_bytes"`
	Passes           int          `json:"passes"`
	LogLines         int          `json:"log_lines"`
	MetCPU, MetRSS   bool         `json:"-"`
	Samples          []idleSample `json:"samples"`
}

// idleSample is one read of the process from outside.
type idleSample struct {
	AtS     float64 `json:"at_s"`
	CPUS    float64 `json:"cpu_s"`
	RSSKiB  int64   `json:"rss_kib"`
	AnonKiB int64   `json:"anon_kib"`
}

// idleSpec is the small fleet: ten workers that beat every ttl/3, a hundred
// task locks of running tasks, ten thousand unrelated keys.
func idleSpec(o options) sim.FleetSpec {
	spec := fleetSpec(o)
	spec.Owners, spec.DeadFraction, spec.FinishedFraction, spec.TaskLocks, spec.SharedDomains = 10, 0, 0, 100, 5
	spec.UnrelatedKeys, spec.QueuedTasks, spec.TTL = 10_000, 0, sim.DefaultWorkerTTL
	return spec
}

func runIdle(ctx context.Context, o options, stdout io.Writer, logf func(string, ...any)) error {
	bin, cleanup, err := reaperBinary(ctx, o.binary)
	if err != nil {
		return err
	}
	defer cleanup()
	srv, err := startOwnRedis()
	if err != nil {
		return err
	}
	defer srv.close()
	pool, dbURL, drop, err := benchDatabase(ctx, o.databaseURL)
	if err != nil {
		return err
	}
	defer drop()
	res := &IdleResults{Machine: describeMachine(), SpanS: o.idleSpan.Seconds(), MillicoreTarget: idleMillicoreTarget, RSSTargetBytes: idleRSSTarget}
	res.Machine.fill(ctx, srv.rdb, pool)
	start := time.Now()
	m, err := sim.BuildFleet(ctx, srv.rdb, pool, idleSpec(o))
	if err != nil {
		return fmt.Errorf("build fleet: %w", err)
	}
	res.Fleet = fleetFigures(o, m, srv.rdb.DBSize(ctx).Val(), time.Since(start))
	res.Fleet.Owners, res.Fleet.TaskLocks, res.Fleet.UnrelatedKeys, res.Fleet.ScaledUnrelated = 10, 100, 10_000, 0
	beat, stop := context.WithCancel(ctx)
	defer stop()
	go func() { _ = m.KeepAlive(beat, pool) }()
	var env []string
	var k *idleKube
	if o.idleWatch {
		if k, err = startIdleKube(idleSpec(o)); err != nil {
			return err
		}
		defer k.close()
		env, res.Watch = k.env(), true
	}
	if err := measureIdle(ctx, o, bin, srv.url, dbURL, env, res, logf); err != nil {
		return err
	}
	if k != nil {
		res.Watches, res.Lists = k.api.Watches(), k.api.Lists()
	}
	// run logs no line per pass; its history of passes has one entry each.
	res.Passes = int(srv.rdb.LLen(ctx, history.Key(history.DefaultPrefix)).Val())
	if err := writeIdleMarkdown(stdout, res); err != nil {
		return err
	}
	if o.jsonPath != "" {
		return writeJSON(o.jsonPath, res)
	}
	return nil
}

// measureIdle runs `run` with the status page on under the chart's memory
// setting and everything else as shipped, reads its CPU time and memory
// from /proc every second for the span, then stops it.
func measureIdle(ctx context.Context, o options, bin, redisURL, dbURL string, env []string, res *IdleResults, logf func(string, ...any)) error {
	dir, err := os.MkdirTemp("", "lr-bench-idle-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	stderrPath := filepath.Join(dir, "stderr")
	stderr, err := os.Create(stderrPath)
	if err != nil {
		return err
	}
	defer stderr.Close()
	args := []string{"run", "--listen", "127.0.0.1:0"}
	res.Command = "lock-reaper " + strings.Join(args, " ")
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdout, cmd.Stderr = io.Discard, stderr
	cmd.Env = []string{"REAPER_REDIS_URL=" + redisURL, "REAPER_DATABASE_URL=" + dbURL, "REAPER_LOG_FORMAT=json",
		memlimit.Env + "=" + fmt.Sprint(rssLimit)}
	cmd.Env = append(cmd.Env, env...)
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", bin, err)
	}
	pid := cmd.Process.Pid
	hwm := watchHighWaterMark(pid)
	warm := min(time.Minute, o.idleSpan/5)
	res.WarmS = warm.Seconds()
	logf("idle: %s for %v (steady figures after %v)", res.Command, o.idleSpan, warm)
	t := time.NewTicker(time.Second)
	defer t.Stop()
	var warmCPU float64
	var warmAt time.Duration
	for at := time.Duration(0); at < o.idleSpan; at = time.Since(start) {
		s, ok := readIdleSample(pid)
		if !ok {
			return fmt.Errorf("idle: the process ended early; stderr ends: %s", tail(stderrPath))
		}
		s.AtS = round2(at.Seconds())
		res.Samples = append(res.Samples, s)
		if warmAt == 0 && at >= warm {
			warmCPU, warmAt = s.CPUS, at
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
	last, ok := readIdleSample(pid)
	end := time.Since(start)
	if !ok {
		return fmt.Errorf("idle: the process ended early; stderr ends: %s", tail(stderrPath))
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	_ = cmd.Wait()
	peak := hwm()
	res.CPUSeconds, res.SteadyCPUSeconds = last.CPUS, last.CPUS-warmCPU
	res.Millicores = round2(1000 * last.CPUS / end.Seconds())
	res.SteadyMillicores = round2(1000 * res.SteadyCPUSeconds / (end - warmAt).Seconds())
	var rss, anon []float64
	for _, s := range res.Samples {
		if s.AtS >= warmAt.Seconds() {
			rss, anon = append(rss, float64(s.RSSKiB)), append(anon, float64(s.AnonKiB))
		}
	}
	res.SteadyRSSBytes, res.SteadyAnonBytes = int64(median(rss))<<10, int64(median(anon))<<10
	res.PeakRSSBytes, res.LastRSSBytes = peak.hwm, last.RSSKiB<<10
	res.MetCPU, res.MetRSS = res.SteadyMillicores < idleMillicoreTarget, res.PeakRSSBytes <= idleRSSTarget
	res.LogLines = countLines(stderrPath)
	logf("idle: %.3f s CPU over %.0f s: %.2f millicores (%.2f after the warm-up); peak RSS %s, steady %s (anonymous %s)",
		res.CPUSeconds, end.Seconds(), res.Millicores, res.SteadyMillicores, mib(uint64(res.PeakRSSBytes)), mib(uint64(res.SteadyRSSBytes)),
		mib(uint64(res.SteadyAnonBytes)))
	return nil
}

// readIdleSample reads utime + stime of /proc/PID/stat and VmRSS, RssAnon
// of /proc/PID/status.
func readIdleSample(pid int) (idleSample, bool) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return idleSample{}, false
	}
	// The command's name is in parentheses and may hold spaces: the fields
	// are counted after its closing one. utime and stime are fields 14 and
	// 15, the 12th and 13th after the name.
	i := strings.LastIndexByte(string(stat), ')')
	fields := strings.Fields(string(stat[i+1:]))
	if len(fields) < 13 {
		return idleSample{}, false
	}
	ut, _ := strconv.ParseInt(fields[11], 10, 64)
	st, _ := strconv.ParseInt(fields[12], 10, 64)
	s := idleSample{CPUS: float64(ut+st) / userHZ}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return idleSample{}, false
	}
	for line := range strings.SplitSeq(string(status), "\n") {
		name, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
		switch name {
		case "VmRSS":
			s.RSSKiB = kb
		case "RssAnon":
			s.AnonKiB = kb
		}
	}
	return s, s.RSSKiB > 0
}

// countLines counts the lines of the log.
func countLines(path string) int {
	b, _ := os.ReadFile(path)
	return strings.Count(string(b), "\n")
}

func writeIdleMarkdown(w io.Writer, r *IdleResults) error {
	var b strings.Builder
	mc, f := r.Machine, r.Fleet
	fmt.Fprintf(&b, "Machine: %d CPUs (%s), %s, Redis %s, PostgreSQL %s\n\n", mc.CPUs, mc.CPUModel, mc.Go, mc.Redis, mc.PostgreSQL)
	fmt.Fprintf(&b, "`%s` (status page on, `%s=128Mi`, every other setting as shipped) for %.0f s over a small fleet whose workers all beat: %d owners, %d task locks, %s keys in Redis. "+
		"Read from /proc every second; the steady figures leave out the first %.0f s.%s\n\n", r.Command, memlimit.Env, r.SpanS, f.Owners, f.TaskLocks, thousands(f.KeysInRedis), r.WarmS, watchNote(r.Watch))
	b.WriteString("| figure | measured | target | met |\n|---|---:|---:|---|\n")
	yes := func(ok bool) string {
		if ok {
			return "yes"
		}
		return "**no**"
	}
	fmt.Fprintf(&b, "| CPU, steady | %.2f millicores (%.3f s over %.0f s) | < %.0f millicore | %s |\n", r.SteadyMillicores, r.SteadyCPUSeconds, r.SpanS-r.WarmS, r.MillicoreTarget, yes(r.MetCPU))
	fmt.Fprintf(&b, "| CPU, whole run | %.2f millicores (%.3f s) | | |\n", r.Millicores, r.CPUSeconds)
	fmt.Fprintf(&b, "| peak RSS (VmHWM) | %s | ≤ %s | %s |\n", mib(uint64(r.PeakRSSBytes)), mib(uint64(r.RSSTargetBytes)), yes(r.MetRSS))
	fmt.Fprintf(&b, "| steady RSS (median VmRSS), of it anonymous | %s, %s | | |\n", mib(uint64(r.SteadyRSSBytes)), mib(uint64(r.SteadyAnonBytes)))
	fmt.Fprintf(&b, "| RSS at the end | %s | | |\n", mib(uint64(r.LastRSSBytes)))
	fmt.Fprintf(&b, "| passes, log lines | %d, %d | | |\n", r.Passes, r.LogLines)
	if r.Watch {
		fmt.Fprintf(&b, "| the pods watched (stand-in API server): watches, lists | %d, %d | | |\n", r.Watches, r.Lists)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func watchNote(watch bool) string {
	if !watch {
		return " No Kubernetes."
	}
	return " The pods watched: a stand-in API server with a running pod per worker (-idle-watch), bookmarks every minute."
}
