package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"os/exec"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/lock-reaper/lock-reaper/internal/exitcode"
	"github.com/lock-reaper/lock-reaper/internal/sim"
	"github.com/lock-reaper/lock-reaper/reaper"
	"github.com/lock-reaper/lock-reaper/reaper/redislocks"
)

// scenarioIncident is the incident of 2026-07-24 among a busy fleet: one
// dead owner's 543 task locks and 524 resource holdings beside 100 live
// workers' 20,000 healthy locks and 1,000,000 unrelated keys. Each round
// times, in turn, one plain SCAN walk of the keyspace (the reaper's MATCH
// and COUNT, nothing read), the baseline read (baseline.go), the real
// binary's `audit` and its `once`; the dead owner's keys and rows are put
// back after each `once`, untimed. Ratios are taken within a round: `once`
// over the walk, `audit` over the baseline read.
const scenarioIncident = "incident"

// The incident's defaults (-task-locks and -unrelated change the live
// tasks and the unrelated keys).
const (
	incidentLiveWorkers = 100
	incidentLiveTasks   = 10_000
	incidentUnrelated   = 1_000_000
)

// IncidentResults is what the incident scenario measured.
type IncidentResults struct {
	Machine Machine `json:"machine"`
	// GOMAXPROCS is the bench's and the children's.
	GOMAXPROCS int `json:"gomaxprocs"`
	// Contenders counts the busy loops the bench ran beside the rounds
	// (-contend); LoadBefore and LoadAfter are /proc/loadavg.
	Contenders int             `json:"contenders"`
	LoadBefore string          `json:"load_before"`
	LoadAfter  string          `json:"load_after"`
	Binary     string          `json:"binary"`
	BinaryB    string          `json:"binary_b,omitempty"`
	Keys       int64           `json:"keys_in_redis"`
	Stale      int             `json:"stale_holdings"`
	Rounds     []IncidentRound `json:"rounds"`
	// IncidentRatios are binary A's; B's, with -binary-b.
	IncidentRatios
	B *IncidentRatios `json:"b,omitempty"`
	// Phases is the wall time of each phase of an in-process once and
	// audit after the rounds (incidentPhases).
	Phases []PhaseTimes `json:"phases,omitempty"`
}

// IncidentRatios are the medians of the rounds' ratios of one binary.
// The work ratios leave out the wait for the heartbeats' second read.
type IncidentRatios struct {
	OnceOverWalk          float64 `json:"once_over_walk"`
	OnceWorkOverWalk      float64 `json:"once_work_over_walk"`
	AuditOverBaseline     float64 `json:"audit_over_baseline"`
	AuditWorkOverBaseline float64 `json:"audit_work_over_baseline"`
	AuditOverWalk         float64 `json:"audit_over_walk"`
}

// IncidentRound is one round's wall times, in milliseconds.
type IncidentRound struct {
	WalkMS     float64 `json:"walk_ms"`
	BaselineMS float64 `json:"baseline_ms"`
	// The Redis server's CPU time (INFO cpu, user and system) while each
	// ran: how busy the walk keeps Redis, and what a pass asks of it
	// besides. It counts every client of a shared server.
	WalkRedisCPUMS     float64 `json:"walk_redis_cpu_ms"`
	BaselineRedisCPUMS float64 `json:"baseline_redis_cpu_ms"`
	// IncidentPasses are binary A's; B's, with -binary-b, in the same round.
	IncidentPasses
	B *IncidentPasses `json:"b,omitempty"`
}

// IncidentPasses are one binary's audit and once in a round.
type IncidentPasses struct {
	Audit childRun `json:"audit"`
	Once  childRun `json:"once"`
}

// childRun is one run of the binary: its wall time, its wait for the
// heartbeats' second read, its report's phase times (none from a binary
// too old to report them) and the Redis server's CPU time meanwhile.
type childRun struct {
	WallMS     float64            `json:"wall_ms"`
	WaitMS     float64            `json:"wait_ms"`
	Phases     []reaper.PhaseTime `json:"phases,omitempty"`
	RedisCPUMS float64            `json:"redis_cpu_ms"`
}

func runIncident(ctx context.Context, o options, stdout io.Writer, logf func(string, ...any)) error {
	if o.render != "" {
		return renderIncident(o.render, stdout)
	}
	bin, cleanup, err := reaperBinary(ctx, o.binary)
	if err != nil {
		return err
	}
	defer cleanup()
	e, err := newEnv(ctx, o.redisURL, o.databaseURL)
	if err != nil {
		return err
	}
	defer e.close()
	rdb, pool, err := e.clients(ctx)
	if err != nil {
		return err
	}
	defer rdb.Close()
	defer pool.Close()
	spec := sim.IncidentOf20260724()
	spec.LiveWorkers, spec.LiveTasksPerWorker, spec.UnrelatedKeys = incidentLiveWorkers, max(o.taskLocks/incidentLiveWorkers, 1), o.unrelated
	logf("building the incident: %d task locks and %d resource holdings of one dead owner, %d live workers with %d tasks each, %d unrelated keys",
		spec.DeadTaskLocks, spec.DeadResourceLocks, spec.LiveWorkers, spec.LiveTasksPerWorker, spec.UnrelatedKeys)
	inc, err := sim.BuildIncident(ctx, rdb, pool, spec)
	if err != nil {
		return fmt.Errorf("build the incident: %w", err)
	}
	stopBeat := inc.KeepAliveInBackground(context.WithoutCancel(ctx), pool)
	defer func() { _ = stopBeat() }()
	saved, err := saveIncident(ctx, rdb, pool, inc)
	if err != nil {
		return err
	}
	res := &IncidentResults{Machine: describeMachine(), GOMAXPROCS: runtime.GOMAXPROCS(0), Contenders: o.contend, Binary: bin,
		Keys: rdb.DBSize(ctx).Val(), Stale: len(inc.Stale)}
	res.Machine.fill(ctx, rdb, pool)
	stopContend, err := contend(o.contend)
	if err != nil {
		return err
	}
	defer stopContend()
	res.LoadBefore = loadAverage()
	redisURL, err := claimedRedisURL(e.redisURL, e.claim.DB)
	if err != nil {
		return err
	}
	child := incidentChild{bin: bin, redisURL: redisURL, databaseURL: e.databaseURL, stale: len(inc.Stale), lost: len(inc.Cancel) + len(inc.Requeue)}
	var childB *incidentChild
	if o.binaryB != "" {
		b := child
		b.bin = o.binaryB
		childB, res.BinaryB = &b, o.binaryB
	}
	for round := range o.runs {
		var rd IncidentRound
		cpu := redisCPU(rdb)
		start := time.Now()
		if _, err := plainWalk(ctx, rdb, o.scanCount); err != nil {
			return err
		}
		rd.WalkMS = ms(time.Since(start))
		rd.WalkRedisCPUMS, cpu = ms(redisCPU(rdb)-cpu), redisCPU(rdb)
		start = time.Now()
		if _, err := baselineWalk(ctx, rdb, o.scanCount, o.batchSize); err != nil {
			return err
		}
		rd.BaselineMS = ms(time.Since(start))
		rd.BaselineRedisCPUMS = ms(redisCPU(rdb) - cpu)
		// With -binary-b, both binaries run in each round, in turns: A
		// first in odd rounds, B first in even ones.
		order := []*incidentChild{&child}
		if childB != nil {
			order = append(order, childB)
			if round%2 == 1 {
				order[0], order[1] = order[1], order[0]
			}
		}
		for _, c := range order {
			passes, err := c.passes(ctx, rdb)
			if err != nil {
				return err
			}
			if c == childB {
				rd.B = &passes
			} else {
				rd.IncidentPasses = passes
			}
			if err := saved.restore(ctx, rdb, pool); err != nil {
				return err
			}
		}
		logf("round %d/%d: walk %.1f ms, baseline %.1f ms, audit %.1f ms (%.2f× baseline), once %.1f ms (%.2f× walk; waited %.1f ms for the second read)",
			round+1, o.runs, rd.WalkMS, rd.BaselineMS, rd.Audit.WallMS, rd.Audit.WallMS/rd.BaselineMS, rd.Once.WallMS, rd.Once.WallMS/rd.WalkMS, rd.Once.WaitMS)
		res.Rounds = append(res.Rounds, rd)
	}
	res.LoadAfter = loadAverage()
	res.summarise()
	if o.phaseTimes {
		if res.Phases, err = incidentPhases(ctx, o, rdb, pool, saved, logf); err != nil {
			return err
		}
	}
	if err := writeIncidentMarkdown(stdout, res); err != nil {
		return err
	}
	if o.jsonPath != "" {
		return writeJSON(o.jsonPath, res)
	}
	return nil
}

func (r *IncidentResults) summarise() {
	r.IncidentRatios = ratiosOf(r.Rounds, func(rd IncidentRound) *IncidentPasses { return &rd.IncidentPasses })
	if len(r.Rounds) > 0 && r.Rounds[0].B != nil {
		b := ratiosOf(r.Rounds, func(rd IncidentRound) *IncidentPasses { return rd.B })
		r.B = &b
	}
}

// ratiosOf is the medians of the rounds' ratios of the binary whose passes
// pick takes from a round.
func ratiosOf(rounds []IncidentRound, pick func(IncidentRound) *IncidentPasses) IncidentRatios {
	var once, work, audit, auditWork, auditWalk []float64
	for _, rd := range rounds {
		p := pick(rd)
		once = append(once, p.Once.WallMS/rd.WalkMS)
		work = append(work, p.Once.work()/rd.WalkMS)
		audit = append(audit, p.Audit.WallMS/rd.BaselineMS)
		auditWork = append(auditWork, p.Audit.work()/rd.BaselineMS)
		auditWalk = append(auditWalk, p.Audit.WallMS/rd.WalkMS)
	}
	return IncidentRatios{OnceOverWalk: round3(median(once)), OnceWorkOverWalk: round3(median(work)),
		AuditOverBaseline: round3(median(audit)), AuditWorkOverBaseline: round3(median(auditWork)), AuditOverWalk: round3(median(auditWalk))}
}

// work is the run's wall time without its wait for the second read.
func (c childRun) work() float64 { return c.WallMS - c.WaitMS }

func round3(f float64) float64 { return float64(int64(f*1000+0.5)) / 1000 }

// plainWalk is one SCAN of the whole keyspace with the reaper's MATCH and
// COUNT, reading nothing else: what reading the keyspace once costs.
func plainWalk(ctx context.Context, rdb *redis.Client, scanCount int) (int, error) {
	n := 0
	iter := rdb.Scan(ctx, 0, redislocks.ScanMatch, int64(scanCount)).Iterator()
	for iter.Next(ctx) {
		n++
	}
	if err := iter.Err(); err != nil {
		return n, fmt.Errorf("plain walk: %w", err)
	}
	return n, nil
}

// incidentChild runs the real binary against the incident.
type incidentChild struct {
	bin, redisURL, databaseURL string
	stale, lost                int
}

// run runs `lock-reaper MODE --output json`, checks its report against the
// incident, and returns its wall time, how long it waited for the
// heartbeats' second read, and its phase times.
func (c incidentChild) run(ctx context.Context, mode string) (childRun, error) {
	cmd := exec.CommandContext(ctx, c.bin, mode, "--output", "json")
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.Env = []string{
		"REAPER_REDIS_URL=" + c.redisURL,
		"REAPER_DATABASE_URL=" + c.databaseURL,
		"REAPER_LOG_FORMAT=json",
		"REAPER_HEARTBEAT_RECHECK=" + benchRecheck.String(),
	}
	// The children run with the bench's GOMAXPROCS.
	if v := os.Getenv("GOMAXPROCS"); v != "" {
		cmd.Env = append(cmd.Env, "GOMAXPROCS="+v)
	}
	start := time.Now()
	err := cmd.Run()
	wall := time.Since(start)
	var exitErr *exec.ExitError
	if err != nil && !errors.As(err, &exitErr) {
		return childRun{}, fmt.Errorf("run %s %s: %w", c.bin, mode, err)
	}
	want := exitcode.OK
	if mode == reaper.ModeAudit {
		want = exitcode.Findings
	}
	if code := cmd.ProcessState.ExitCode(); code != want {
		return childRun{}, fmt.Errorf("%s: exit code %d, want %d; stderr: %s", mode, code, want, lastBytes(stderr.String(), 2000))
	}
	var rep struct {
		Summary    reaper.Summary     `json:"summary"`
		PhaseTimes []reaper.PhaseTime `json:"phase_times"`
	}
	if err := json.Unmarshal([]byte(stdout.String()), &rep); err != nil {
		return childRun{}, fmt.Errorf("%s: JSON report: %w", mode, err)
	}
	s := rep.Summary
	// The dead owner's membership of the domain is deferred by a real pass:
	// the live workers' ten thousand tasks reserve the domain, more than one
	// release call checks (redislocks.ReserverCallLimit).
	got, tasks := s.Released+s.FindingsByResult[reaper.ResultDeferred], s.TasksUpdated
	if mode == reaper.ModeAudit {
		got, tasks = s.FindingsByResult[reaper.ResultWouldRelease], s.TasksByResult[reaper.ResultWouldUpdate]
	}
	if got != c.stale || tasks != c.lost {
		return childRun{}, fmt.Errorf("%s: %d holdings and %d tasks, the incident has %d stale holdings and %d lost tasks", mode, got, tasks, c.stale, c.lost)
	}
	run := childRun{WallMS: ms(wall), WaitMS: recheckWaitMS(stderr.String()), Phases: rep.PhaseTimes}
	for _, p := range rep.PhaseTimes {
		if p.Phase == reaper.TimeSecondRead {
			run.WaitMS = p.MS
		}
	}
	return run, nil
}

// passes runs the binary's audit, then its once, each with the Redis
// server's CPU time it took.
func (c incidentChild) passes(ctx context.Context, rdb *redis.Client) (IncidentPasses, error) {
	var p IncidentPasses
	for _, run := range []struct {
		mode string
		into *childRun
	}{{reaper.ModeAudit, &p.Audit}, {reaper.ModeOnce, &p.Once}} {
		cpu := redisCPU(rdb)
		r, err := c.run(ctx, run.mode)
		if err != nil {
			return p, err
		}
		r.RedisCPUMS = ms(redisCPU(rdb) - cpu)
		*run.into = r
	}
	return p, nil
}

// recheckWaitMS is the time between the child's log line saying rows look
// dead and its next line: the wait for the heartbeats' second read and the
// read itself.
func recheckWaitMS(log string) float64 {
	var from time.Time
	for line := range strings.SplitSeq(log, "\n") {
		var l struct {
			Time time.Time `json:"time"`
			Msg  string    `json:"msg"`
		}
		if json.Unmarshal([]byte(line), &l) != nil {
			continue
		}
		switch {
		case strings.HasPrefix(l.Msg, "rows look dead"):
			from = l.Time
		case !from.IsZero():
			return ms(l.Time.Sub(from))
		}
	}
	return 0
}

func lastBytes(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// loadAverage is /proc/loadavg's first three figures.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	return strings.Join(f[:min(3, len(f))], " ")
}

// contend starts n busy loops beside the rounds, each a process of its own
// (`sh -c 'while :; do :; done'`), so that the CPU is contended whatever
// else the machine runs; the returned function ends them.
func contend(n int) (func(), error) {
	var cmds []*exec.Cmd
	stop := func() {
		for _, c := range cmds {
			_ = c.Process.Kill()
			_ = c.Wait()
		}
	}
	for range n {
		c := exec.Command("sh", "-c", "while :; do :; done")
		if err := c.Start(); err != nil {
			stop()
			return nil, fmt.Errorf("start a busy loop: %w", err)
		}
		cmds = append(cmds, c)
	}
	return stop, nil
}

// savedIncident is what a real pass changes in the incident, kept so that
// the next round finds it again: the dead owner's keys, dumped, and its
// tasks' rows.
type savedIncident struct {
	dumps map[string]string
	tasks []string
}

func saveIncident(ctx context.Context, rdb *redis.Client, pool *pgxpool.Pool, inc *sim.Incident) (*savedIncident, error) {
	keys := []string{redislocks.OwnerLocksPrefix + inc.DeadOwner, redislocks.ActiveOwnersKey}
	for _, h := range inc.Stale {
		keys = append(keys, h.Key)
	}
	slices.Sort(keys)
	keys = slices.Compact(keys)
	s := &savedIncident{dumps: make(map[string]string, len(keys)), tasks: append(slices.Clone(inc.Cancel), inc.Requeue...)}
	pipe := rdb.Pipeline()
	cmds := make([]*redis.StringCmd, len(keys))
	for i, k := range keys {
		cmds[i] = pipe.Dump(ctx, k)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, fmt.Errorf("dump the dead owner's keys: %w", err)
	}
	for i, k := range keys {
		s.dumps[k] = cmds[i].Val()
	}
	for _, q := range []string{
		`CREATE TABLE bench_saved_task AS SELECT pulp_id, state, app_lock_id, finished_at, error FROM core_task WHERE pulp_id = ANY($1::uuid[])`,
		`CREATE TABLE bench_saved_report AS SELECT pulp_id, state FROM core_progressreport WHERE task_id = ANY($1::uuid[])`,
	} {
		if _, err := pool.Exec(ctx, q, s.tasks); err != nil {
			return nil, fmt.Errorf("save the dead owner's tasks: %w", err)
		}
	}
	return s, nil
}

// restore puts back what a real pass changed: the dead owner's keys and
// rows, and removes what the reaper wrote (its own keys, the cancel
// signals).
func (s *savedIncident) restore(ctx context.Context, rdb *redis.Client, pool *pgxpool.Pool) error {
	var written []string
	iter := rdb.Scan(ctx, 0, "pulp:[lt][oa][cs]k*", 1000).Iterator()
	for iter.Next(ctx) {
		if k := iter.Val(); strings.HasPrefix(k, "pulp:lock_reaper:") || strings.HasPrefix(k, redislocks.CancelSignalPrefix) {
			written = append(written, k)
		}
	}
	if err := iter.Err(); err != nil {
		return fmt.Errorf("find what the pass wrote: %w", err)
	}
	pipe := rdb.Pipeline()
	for _, k := range written {
		pipe.Del(ctx, k)
	}
	for k, v := range s.dumps {
		pipe.RestoreReplace(ctx, k, 0, v)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("put the dead owner's keys back: %w", err)
	}
	for _, q := range []string{
		`UPDATE core_task t SET state = s.state, app_lock_id = s.app_lock_id, finished_at = s.finished_at, error = s.error FROM bench_saved_task s WHERE t.pulp_id = s.pulp_id`,
		`UPDATE core_progressreport p SET state = s.state FROM bench_saved_report s WHERE p.pulp_id = s.pulp_id`,
	} {
		if _, err := pool.Exec(ctx, q); err != nil {
			return fmt.Errorf("put the dead owner's tasks back: %w", err)
		}
	}
	return nil
}

// PhaseTimes is one in-process pass over the incident: when each phase of
// it began, in milliseconds from its start.
type PhaseTimes struct {
	Mode   string      `json:"mode"`
	WallMS float64     `json:"wall_ms"`
	Marks  []PhaseMark `json:"marks"`
}

// PhaseMark is the moment a pass told (Options.Phase, Options.Progress)
// that it moved on.
type PhaseMark struct {
	Phase string  `json:"phase"`
	AtMS  float64 `json:"at_ms"`
}

// incidentPhases runs an audit and a once in this process, -runs times
// each, and notes when each of their phases began; with -cpuprofile, each
// pass is profiled into a file of its own (FILE-MODE-N), which `go tool
// pprof` merges when given several.
func incidentPhases(ctx context.Context, o options, rdb *redis.Client, pool *pgxpool.Pool, saved *savedIncident, logf func(string, ...any)) ([]PhaseTimes, error) {
	cfg := benchConfig()
	cfg.ScanCount, cfg.BatchSize = o.scanCount, o.batchSize
	cfg.MaxReleases, cfg.MaxTaskUpdates = math.MaxInt32, math.MaxInt32
	r, err := reaper.New(cfg, rdb, pool, discardJSONLogger())
	if err != nil {
		return nil, err
	}
	var out []PhaseTimes
	for i := range o.runs {
		for _, mode := range []string{reaper.ModeAudit, reaper.ModeOnce} {
			pt := PhaseTimes{Mode: mode}
			start := time.Now()
			mark := func(name string) {
				if n := len(pt.Marks); n == 0 || pt.Marks[n-1].Phase != name {
					pt.Marks = append(pt.Marks, PhaseMark{Phase: name, AtMS: ms(time.Since(start))})
				}
			}
			opts := reaper.Options{Mode: mode, Progress: func(int) { mark("reading redis") }, Phase: func(name string, _, _ int) { mark(name) }}
			stop := profileTo(o.cpuProfile, fmt.Sprintf("%s-%d", mode, i+1), logf)
			start = time.Now()
			if _, err := r.RunOnce(ctx, opts); err != nil {
				stop()
				return nil, fmt.Errorf("in-process %s: %w", mode, err)
			}
			pt.WallMS = ms(time.Since(start))
			stop()
			out = append(out, pt)
			logf("in-process %s: %.1f ms; %v", mode, pt.WallMS, pt.Marks)
			if mode == reaper.ModeOnce {
				if err := saved.restore(ctx, rdb, pool); err != nil {
					return nil, err
				}
			}
		}
	}
	return out, nil
}

func writeIncidentMarkdown(w io.Writer, r *IncidentResults) error {
	var b strings.Builder
	mc := r.Machine
	fmt.Fprintf(&b, "Machine: %d CPUs (%s), %s, Redis %s, PostgreSQL %s; GOMAXPROCS %d; %d busy loops beside; load average %s before, %s after\n\n",
		mc.CPUs, mc.CPUModel, mc.Go, mc.Redis, mc.PostgreSQL, r.GOMAXPROCS, r.Contenders, r.LoadBefore, r.LoadAfter)
	fmt.Fprintf(&b, "The incident of 2026-07-24 among a busy fleet: %s stale holdings of one dead owner, %s keys in Redis; binary %s\n\n", thousands(int64(r.Stale)), thousands(r.Keys), r.Binary)
	writeBinaryRounds(&b, "A", r.Rounds, r.IncidentRatios, func(rd IncidentRound) *IncidentPasses { return &rd.IncidentPasses })
	if r.B != nil {
		fmt.Fprintf(&b, "\nBinary B, %s, in the same rounds (A first in odd rounds, B first in even ones):\n\n", r.BinaryB)
		writeBinaryRounds(&b, "B", r.Rounds, *r.B, func(rd IncidentRound) *IncidentPasses { return rd.B })
	}
	if len(r.Phases) > 0 {
		b.WriteString("\nIn-process passes, when each phase began (ms from the start):\n\n")
		for _, p := range r.Phases {
			var marks []string
			for _, m := range p.Marks {
				marks = append(marks, fmt.Sprintf("%s %.0f", m.Phase, m.AtMS))
			}
			fmt.Fprintf(&b, "- %s, %.1f ms: %s\n", p.Mode, p.WallMS, strings.Join(marks, "; "))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeBinaryRounds writes one binary's rounds, the medians of their ratios,
// where its time went and what it asked of Redis.
func writeBinaryRounds(b *strings.Builder, binary string, rounds []IncidentRound, ratios IncidentRatios, pick func(IncidentRound) *IncidentPasses) {
	b.WriteString("| round | walk | baseline read | `audit` | of it the second read's wait | `once` | of it the second read's wait | audit / baseline | audit without the wait / baseline | once / walk | once without the wait / walk |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for i, rd := range rounds {
		p := pick(rd)
		fmt.Fprintf(b, "| %d | %.1f ms | %.1f ms | %.1f ms | %.1f ms | %.1f ms | %.1f ms | %.3f | %.3f | %.3f | %.3f |\n", i+1, rd.WalkMS, rd.BaselineMS, p.Audit.WallMS, p.Audit.WaitMS, p.Once.WallMS, p.Once.WaitMS,
			p.Audit.WallMS/rd.BaselineMS, p.Audit.work()/rd.BaselineMS, p.Once.WallMS/rd.WalkMS, p.Once.work()/rd.WalkMS)
	}
	fmt.Fprintf(b, "\nMedians of binary %s's ratios: audit / baseline read **%.3f**, without the second read's wait **%.3f**, audit / walk %.3f, once / walk **%.3f**, once without the second read's wait / walk **%.3f**\n",
		binary, ratios.AuditOverBaseline, ratios.AuditWorkOverBaseline, ratios.AuditOverWalk, ratios.OnceOverWalk, ratios.OnceWorkOverWalk)
	writePhaseBreakdown(b, binary, rounds, pick)
	writeRedisBusy(b, binary, rounds, pick)
}

// discardJSONLogger formats every log line as production does and throws it
// away, so that its cost is measured but not the disk's.
func discardJSONLogger() *slog.Logger {
	return slog.New(slog.NewJSONHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

// profileTo profiles the CPU into base-name until the returned function is
// called; nothing when base is "".
func profileTo(base, name string, logf func(string, ...any)) func() {
	if base == "" {
		return func() {}
	}
	path := base + "-" + name
	f, err := os.Create(path)
	if err != nil {
		logf("cpu profile: %v", err)
		return func() {}
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		logf("cpu profile: %v", err)
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		_ = f.Close()
	}
}

// writeRedisBusy writes how busy the walk keeps the Redis server and what
// the passes ask of it besides, from the rounds' medians: a single-threaded
// server that the walk alone keeps busy cannot serve a pass's other
// commands in the walk's gaps, so their CPU time adds to the pass's wall.
func writeRedisBusy(b *strings.Builder, binary string, rounds []IncidentRound, pick func(IncidentRound) *IncidentPasses) {
	var walk, walkCPU, baselineCPU, auditCPU, onceCPU []float64
	for _, rd := range rounds {
		p := pick(rd)
		if rd.WalkRedisCPUMS <= 0 || p.Audit.RedisCPUMS <= 0 {
			return
		}
		walk, walkCPU = append(walk, rd.WalkMS), append(walkCPU, rd.WalkRedisCPUMS)
		baselineCPU, auditCPU, onceCPU = append(baselineCPU, rd.BaselineRedisCPUMS), append(auditCPU, p.Audit.RedisCPUMS), append(onceCPU, p.Once.RedisCPUMS)
	}
	w, wc := median(walk), median(walkCPU)
	fmt.Fprintf(b, "\nRedis's CPU with binary %s (INFO cpu, medians over the rounds): the walk %.1f ms over %.1f ms of wall (the server busy %.0f%% of the walk); the baseline read %.1f ms, `audit` %.1f ms, `once` %.1f ms: %.1f, %.1f and %.1f ms above the walk's. A walk that keeps the server busy leaves few gaps for a pass's other commands: at a server busy all through the walk, the pass cannot end before the walk and that CPU, %.3f× (audit) and %.3f× (once) of the walk.\n",
		binary, wc, w, 100*wc/w, median(baselineCPU), median(auditCPU), median(onceCPU),
		median(baselineCPU)-wc, median(auditCPU)-wc, median(onceCPU)-wc, (w+median(auditCPU)-wc)/w, (w+median(onceCPU)-wc)/w)
}

// renderIncident writes the tables of an incident run's JSON again.
func renderIncident(path string, stdout io.Writer) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	var res IncidentResults
	if err := json.Unmarshal(raw, &res); err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	return writeIncidentMarkdown(stdout, &res)
}
