package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/lock-reaper/lock-reaper/internal/exitcode"
	"github.com/lock-reaper/lock-reaper/internal/memlimit"
	"github.com/lock-reaper/lock-reaper/internal/sim"
	"github.com/lock-reaper/lock-reaper/reaper"
)

// scenarioDeadOwner is the incident the reaper exists for at its worst for
// memory: one worker died holding everything, so every holding is a finding
// the report lists.
const (
	scenarioFleet     = "fleet"
	scenarioDeadOwner = "dead-owner"
)

// rssLimit is the memory a CronJob's pod is given in the chart's example and
// the sizing advice of docs/kubernetes.md (Memory).
const rssLimit = 128 << 20

// Defaults of the dead-owner scenario where the fleet's do not fit: 100,000
// task locks with one exclusive lock each and one shared domain make 200,001
// holdings.
const (
	deadOwnerTaskLocks = 100_000
	deadOwnerUnrelated = 100_000
)

// The memory limits a command is measured under.
const (
	limitNone = "none"
	// limitGoMemLimit is GOMEMLIMIT at the container's limit, what the chart
	// set before it set REAPER_MEMORY_LIMIT.
	limitGoMemLimit = "GOMEMLIMIT"
	// limitContainer is the chart's setting: REAPER_MEMORY_LIMIT, from which
	// the binary sets a soft limit of its own (internal/memlimit).
	limitContainer = memlimit.Env
)

// DeadOwnerResults is what the dead-owner scenario measured.
type DeadOwnerResults struct {
	Machine  Machine      `json:"machine"`
	Fleet    FleetFigures `json:"fleet"`
	Runs     []ProcessRun `json:"runs"`
	LimitMiB int          `json:"limit_mib"`
	// Met says every run under the chart's setting (REAPER_MEMORY_LIMIT)
	// kept its peak RSS within LimitMiB; MetBy says it of each memory limit.
	Met   bool            `json:"met"`
	MetBy map[string]bool `json:"met_by_limit"`
	// Longest is the longest Redis command of a real pass (longest.go).
	Longest []LongestCommand `json:"longest_command"`
}

// deadOwnerSpec is the fleet: one owner, dead, holding every lock, with its
// tasks running (lost).
//
// With -shape finished the owner is alive and every task finished half an
// hour ago: the same number of stale holdings, of finished tasks, and no
// lost task.
func deadOwnerSpec(o options) sim.FleetSpec {
	spec := fleetSpec(o)
	spec.Owners, spec.DeadFraction, spec.FinishedFraction, spec.LegacyFraction = 1, 1, 0, 0
	if o.shape == shapeFinished {
		spec.DeadFraction, spec.FinishedFraction = 0, 1
	}
	spec.SharedDomains = 1
	return spec
}

// The dead-owner scenario's shapes (-shape).
const (
	shapeRunning  = "running"
	shapeFinished = "finished"
)

// deadOwnerCases are the commands measured, each a real process. The audits
// share one fleet; each real pass, which releases everything, gets a fresh
// one. Every run lifts max_releases and max_task_updates, so that one pass
// does all the work and every finding carries a release result and a log
// line: the worst case.
var deadOwnerCases = func() []processCase {
	base := []processCase{
		{name: "audit, text report", args: []string{"audit"}, exit: exitcode.Findings},
		{name: "audit, JSON report", args: []string{"audit", "--output", "json"}, exit: exitcode.Findings, json: true},
		{name: "once, text report", args: []string{"once"}, exit: exitcode.OK, real: true},
		{name: "once, JSON report", args: []string{"once", "--output", "json"}, exit: exitcode.OK, real: true, json: true},
	}
	// Each again with a memory limit: GOMEMLIMIT at the container's limit,
	// as the chart set it before, and what the chart sets now, the
	// container's limit in REAPER_MEMORY_LIMIT, below which the binary sets
	// its own soft limit.
	var cases []processCase
	for _, limit := range []string{limitNone, limitGoMemLimit, limitContainer} {
		for _, c := range base {
			c.limit = limit
			switch limit {
			case limitGoMemLimit:
				c.name += ", GOMEMLIMIT 128MiB"
				c.memLimit = fmt.Sprint(rssLimit)
			case limitContainer:
				c.name += ", " + memlimit.Env + " 128Mi"
				c.containerLimit = fmt.Sprint(rssLimit)
			}
			cases = append(cases, c)
		}
	}
	// The audits first, on one fleet; then the real passes, each on its own.
	slices.SortStableFunc(cases, func(a, b processCase) int {
		switch {
		case a.real == b.real:
			return 0
		case b.real:
			return -1
		}
		return 1
	})
	return cases
}()

// runDeadOwner measures the scenario and writes its table and, when asked,
// its JSON.
func runDeadOwner(ctx context.Context, o options, stdout io.Writer, logf func(string, ...any)) error {
	res := &DeadOwnerResults{Machine: describeMachine(), LimitMiB: rssLimit >> 20, MetBy: map[string]bool{}}
	if o.processRuns {
		if err := measureDeadOwnerRuns(ctx, o, res, logf); err != nil {
			return err
		}
	}
	var err error
	if o.longest {
		if res.Longest, err = measureLongestCommands(ctx, o, logf); err != nil {
			return fmt.Errorf("longest command: %w", err)
		}
	}
	if err := writeDeadOwnerMarkdown(stdout, res); err != nil {
		return err
	}
	if o.jsonPath != "" {
		return writeJSON(o.jsonPath, res)
	}
	return nil
}

// measureDeadOwnerRuns runs each of deadOwnerCases as a real process.
func measureDeadOwnerRuns(ctx context.Context, o options, res *DeadOwnerResults, logf func(string, ...any)) error {
	bin, cleanup, err := reaperBinary(ctx, o.binary)
	if err != nil {
		return err
	}
	defer cleanup()
	var f *fleetEnv
	defer func() { f.close() }()
	only, err := regexp.Compile(o.cases)
	if err != nil {
		return fmt.Errorf("-cases: %w", err)
	}
	for _, c := range append(slices.Clone(deadOwnerCases), daemonCases(o)...) {
		if !only.MatchString(c.name) {
			continue
		}
		if f == nil || c.real {
			f.close()
			if f, err = newFleetEnv(ctx, o, logf); err != nil {
				return err
			}
			res.Machine.fill(ctx, f.rdb, f.pool)
			res.Fleet = f.figures
		}
		run, err := c.run(ctx, bin, f, logf)
		if err != nil {
			return fmt.Errorf("%s: %w", c.name, err)
		}
		res.Runs = append(res.Runs, run)
		met, seen := res.MetBy[c.limit]
		res.MetBy[c.limit] = (met || !seen) && run.PeakRSSBytes <= rssLimit
		if c.real {
			if c.shippedLimits {
				f.close()
				f = nil
				continue
			}
			if err := f.checkReaped(ctx); err != nil {
				return fmt.Errorf("%s: %w", c.name, err)
			}
			f.close()
			f = nil
		}
	}
	res.Met = res.MetBy[limitContainer]
	return nil
}

// fleetEnv is one built dead-owner fleet in databases of its own.
type fleetEnv struct {
	e        *env
	rdb      *redis.Client
	pool     *pgxpool.Pool
	manifest *sim.FleetManifest
	figures  FleetFigures
}

func newFleetEnv(ctx context.Context, o options, logf func(string, ...any)) (*fleetEnv, error) {
	e, err := newEnv(ctx, o.redisURL, o.databaseURL)
	if err != nil {
		return nil, err
	}
	f := &fleetEnv{e: e, rdb: redis.NewClient(e.redisOpts)}
	if f.pool, err = pgxpool.New(ctx, e.databaseURL); err != nil {
		f.close()
		return nil, fmt.Errorf("open benchmark database: %w", err)
	}
	spec := deadOwnerSpec(o)
	logf("redis database %d, postgres database %s: building %d task locks of one dead owner, %d unrelated keys", e.claim.DB, e.dbName, spec.TaskLocks, spec.UnrelatedKeys)
	start := time.Now()
	if f.manifest, err = sim.BuildFleet(ctx, f.rdb, f.pool, spec); err != nil {
		f.close()
		return nil, fmt.Errorf("build fleet: %w", err)
	}
	took := time.Since(start)
	keys := f.rdb.DBSize(ctx).Val()
	f.figures = fleetFigures(o, f.manifest, keys, took)
	f.figures.Owners, f.figures.Domains, f.figures.ScaledUnrelated, f.figures.FinishedFraction = 1, 1, 0, 0
	logf("built %d keys, %d stale holdings, %d lost tasks in %v", keys, f.manifest.StaleHoldings, f.manifest.LostTasks, took.Round(time.Millisecond))
	return f, nil
}

// someTask is the id of one of the dead owner's tasks, for the task page;
// "" when none is found.
func (f *fleetEnv) someTask(ctx context.Context) string {
	var id string
	if err := f.pool.QueryRow(ctx, "SELECT pulp_id::text FROM core_task WHERE state = 'running' ORDER BY pulp_id LIMIT 1").Scan(&id); err != nil {
		return ""
	}
	return id
}

// close is safe on a nil or half-built fleet.
func (f *fleetEnv) close() {
	if f == nil {
		return
	}
	if f.pool != nil {
		f.pool.Close()
	}
	if f.rdb != nil {
		_ = f.rdb.Close()
	}
	f.e.close()
}

// checkReaped audits in this process after a real pass: nothing may be left.
func (f *fleetEnv) checkReaped(ctx context.Context) error {
	r, err := reaper.New(benchConfig(), f.rdb, f.pool, nil)
	if err != nil {
		return err
	}
	rep, err := r.RunOnce(ctx, reaper.Options{Mode: reaper.ModeAudit})
	if err != nil {
		return fmt.Errorf("audit after the real pass: %w", err)
	}
	if n := len(rep.Findings) + len(rep.Tasks); n > 0 {
		return fmt.Errorf("audit after the real pass: %d findings and tasks left", n)
	}
	return nil
}

// checkJSONReport reads the one-line JSON report's summary and compares it
// with the fleet: a figure of a wrong answer would measure nothing.
func checkJSONReport(raw []byte, c processCase, m *sim.FleetManifest) error {
	if n := strings.Count(string(raw), "\n"); n != 1 {
		return fmt.Errorf("JSON report: %d lines, want one", n)
	}
	var rep struct {
		Summary reaper.Summary `json:"summary"`
	}
	if err := json.Unmarshal(raw, &rep); err != nil {
		return fmt.Errorf("JSON report: %w", err)
	}
	s := rep.Summary
	got, tasks := s.Released, s.TasksUpdated
	if !c.real {
		got, tasks = s.FindingsByResult[reaper.ResultWouldRelease], s.TasksByResult[reaper.ResultWouldUpdate]
	}
	if got != m.StaleHoldings || tasks != m.LostTasks {
		return fmt.Errorf("JSON report: %d holdings and %d tasks, the fleet has %d stale holdings and %d lost tasks", got, tasks, m.StaleHoldings, m.LostTasks)
	}
	return nil
}

func writeDeadOwnerMarkdown(w io.Writer, r *DeadOwnerResults) error {
	var b strings.Builder
	if len(r.Runs) > 0 {
		mc, f := r.Machine, r.Fleet
		fmt.Fprintf(&b, "Machine: %d CPUs (%s), %s, Redis %s, PostgreSQL %s\n\n", mc.CPUs, mc.CPUModel, mc.Go, mc.Redis, mc.PostgreSQL)
		fmt.Fprintf(&b, "Fleet: one dead owner holding %s task locks with %d exclusive lock(s) each and one shared domain: %s stale holdings, %s lost tasks; %s keys in Redis (%s unrelated).\n\n",
			thousands(int64(f.TaskLocks)), f.ExclusivePerTask, thousands(int64(f.StaleHoldings)), thousands(int64(f.LostTasks)), thousands(f.KeysInRedis), thousands(int64(f.UnrelatedKeys)))
		writeRunsMarkdown(&b, r)
	}
	writeLongestMarkdown(&b, r.Longest)
	_, err := io.WriteString(w, b.String())
	return err
}

// limitLabels name the memory limits in the verdict line.
var limitLabels = map[string]string{
	limitContainer:  "with the chart's setting (`" + memlimit.Env + "`)",
	limitGoMemLimit: "with `GOMEMLIMIT` at the container's limit",
	limitNone:       "without a limit",
}

// limitText is a run's memory limit as the table shows it, and the
// per-pass limits when they were left as shipped.
func limitText(run ProcessRun) string {
	if run.ShippedLimits {
		return memoryLimitText(run) + "; `max_releases`, `max_task_updates` as shipped"
	}
	return memoryLimitText(run)
}

func memoryLimitText(run ProcessRun) string {
	switch {
	case run.ContainerLimit != "" && run.CPUShare > 0:
		n, _ := strconv.ParseUint(run.ContainerLimit, 10, 64)
		return fmt.Sprintf("`%s` %s: soft limit %s; %.1f CPU", memlimit.Env, mib(n), mib(uint64(run.SoftLimitBytes)), run.CPUShare)
	case run.ContainerLimit != "":
		n, _ := strconv.ParseUint(run.ContainerLimit, 10, 64)
		return fmt.Sprintf("`%s` %s: soft limit %s", memlimit.Env, mib(n), mib(uint64(run.SoftLimitBytes)))
	case run.GoMemLimit != "":
		n, _ := strconv.ParseUint(run.GoMemLimit, 10, 64)
		return fmt.Sprintf("`GOMEMLIMIT` %s", mib(n))
	case run.SoftLimitBytes > 0:
		return fmt.Sprintf("soft limit %s (cgroup)", mib(uint64(run.SoftLimitBytes)))
	}
	return "-"
}

// maxInt32Text lifts a per-pass limit out of the way.
var maxInt32Text = fmt.Sprint(math.MaxInt32)

// writeRunsMarkdown is the table of the binary's runs and its verdict.
func writeRunsMarkdown(b *strings.Builder, r *DeadOwnerResults) {
	b.WriteString("| command | memory limit | peak RSS | of it anonymous | wall | stdout | log lines | exit | pages fetched |\n|---|---|---:|---:|---:|---:|---:|---:|---|\n")
	for _, run := range r.Runs {
		fmt.Fprintf(b, "| `%s` | %s | %s | %s | %.1f s | %s in %s line(s) | %s | %d | %s |\n", run.Command, limitText(run), mib(uint64(run.PeakRSSBytes)), mib(uint64(run.PeakAnonBytes)),
			run.WallMS/1000, mib(uint64(run.StdoutBytes)), thousands(int64(run.StdoutLines)), thousands(int64(run.LogLines)), run.ExitCode, pagesText(run))
	}
	b.WriteString("\nPeak RSS within " + fmt.Sprint(r.LimitMiB) + " MiB:")
	for i, limit := range []string{limitContainer, limitGoMemLimit, limitNone} {
		met, ok := r.MetBy[limit]
		if !ok {
			continue
		}
		text := "**no**"
		if met {
			text = "yes"
		}
		sep := ";"
		if i == 0 {
			sep = ""
		}
		fmt.Fprintf(b, "%s %s: %s", sep, limitLabels[limit], text)
	}
	b.WriteString("\n")
}

// pagesText is what a run's status page answered, as the table shows it.
func pagesText(run ProcessRun) string {
	p := run.Pages
	if p == nil {
		return "-"
	}
	s := fmt.Sprintf("%s in %s rounds (%s answered 503 while shed, %s failed); largest `%s`, %s bytes", thousands(int64(p.Fetched)), thousands(int64(p.Rounds)),
		thousands(int64(p.Refreshing)), thousands(int64(p.Failed)), p.LargestPage, thousands(p.LargestBytes))
	if run.ForeignHistory > 0 {
		s += fmt.Sprintf("; history of passes with %d foreign entries of 2 MB", run.ForeignHistory)
	}
	return s
}
