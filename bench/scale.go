package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"regexp"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/lock-reaper/lock-reaper/internal/sim"
)

// scenarioScale measures how a pass's cost grows: rows that each vary one
// factor of the incident fleet (the fleet scenario's default), each with
// its own baseline walk in the same run.
const scenarioScale = "scale"

// scaleRow is one fleet of the scaling table.
type scaleRow struct {
	name string
	// factor says what the row varies from the incident fleet.
	factor string
	set    func(*options)
}

// scaleRows vary one factor at a time from the incident fleet: 1,000,000
// unrelated keys, 100,000 task locks with one exclusive lock each (200,050
// lock keys), 500 owners (50 dead), 50 domains (sets of 10 members: owner i
// holds the tasks i mod 500, all in domain i mod 50).
var scaleRows = []scaleRow{
	{"incident", "the incident fleet", func(*options) {}},
	{"unrelated-100k", "unrelated keys 100,000", func(o *options) { o.unrelated = 100_000 }},
	{"unrelated-10M", "unrelated keys 10,000,000", func(o *options) { o.unrelated = 10_000_000 }},
	{"lock-keys-1k", "lock keys about 1,000 (500 task locks)", func(o *options) { o.taskLocks = 500 }},
	{"lock-keys-100k", "lock keys about 100,000 (50,000 task locks)", func(o *options) { o.taskLocks = 50_000 }},
	// A million lock keys are a million holdings, about 500 MiB of a pass:
	// the row runs under a limit it fits in, as a deployment of that size
	// must, and with a database.timeout of a minute: on the loaded machine
	// the read of 490,000 task rows took 10-15 s of wall time for about 2 s
	// of the reader's CPU (BENCHMARKS.md). 10,000 tasks reserve each domain,
	// more than a release call checks: the dead owners' memberships of
	// them are deferred, by design.
	{"lock-keys-1M", "lock keys about 1,000,000 (500,000 task locks), under a 640Mi limit, database.timeout 60s", func(o *options) {
		o.taskLocks, o.passLimit, o.passDBTimeout, o.deferOK = 500_000, bigFleetLimit, time.Minute, true
	}},
	{"owners-10", "owners 10 (1 dead)", func(o *options) { o.owners = 10 }},
	{"owners-10k", "owners 10,000 (1,000 dead)", func(o *options) { o.owners = 10_000 }},
	// A shared set's members are owners: a set of 100,000 needs 100,000
	// owners in one domain.
	// Every task then reserves the one domain shared: more than
	// ReserverCallLimit reserve it, so its dead members' memberships are
	// deferred, by design (docs/safety.md).
	// 100,000 worker rows: on the loaded machine the snapshot's read of
	// their versions passed the default database.timeout (10 s).
	{"shared-set-100k", "one shared set of 100,000 members (100,000 owners, 1 domain), database.timeout 60s", func(o *options) {
		o.owners, o.domains, o.deferOK, o.passDBTimeout = 100_000, 1, true, time.Minute
	}},
	// 400 waiting tasks beside about 2,000 running ones reserve each domain:
	// more than a release call checks at the default (ReserverCallLimit), so
	// the dead members' memberships of the domains are deferred, by design.
	{"backlog-20k", "20,000 waiting tasks, each reserving its domain shared", func(o *options) { o.queued, o.deferOK = 20_000, true }},
}

// bigFleetLimit is the memory limit of the row of a million lock keys.
const bigFleetLimit = 640 << 20

// ScaleResults is what the scale scenario measured.
type ScaleResults struct {
	Machine Machine    `json:"machine"`
	Rows    []ScaleRow `json:"rows"`
	// LimitMiB is the memory limit the passes ran under (REAPER_MEMORY_LIMIT).
	LimitMiB  int     `json:"limit_mib"`
	BoundMS   float64 `json:"call_bound_ms"`
	Runs      int     `json:"runs"`
	ScanCount int     `json:"scan_count"`
	BatchSize int     `json:"batch_size"`
}

// ScaleRow is one row's figures: the walk and the audit alternate in
// rounds, the real pass runs once, last.
type ScaleRow struct {
	Name   string `json:"name"`
	Factor string `json:"factor"`
	// LimitMiB is the row's REAPER_MEMORY_LIMIT when not the chart's 128Mi.
	LimitMiB int `json:"limit_mib,omitempty"`
	// DBTimeoutS is the row's database.timeout when not the default.
	DBTimeoutS float64      `json:"database_timeout_s,omitempty"`
	Fleet      FleetFigures `json:"fleet"`
	// LockKeys are the lock keys the walk found; MembersPerSet the largest
	// shared set's members.
	LockKeys      int        `json:"lock_keys"`
	MembersPerSet int64      `json:"members_per_set"`
	Walk          []float64  `json:"walk_ms_runs"`
	WalkMS        float64    `json:"walk_ms"`
	WalkServer    ServerLoad `json:"walk_server"`
	Audit         ScalePass  `json:"audit"`
	Once          ScalePass  `json:"once"`
}

// ScalePass is one kind of pass of a row, the real binary under the chart's
// memory setting.
type ScalePass struct {
	// WallMS is the pass's own duration (the report's duration_ms, the
	// bench's 100 ms heartbeat recheck included); ProcessMS the process's,
	// start-up and exit included. Medians for the audit.
	WallMS    float64   `json:"wall_ms"`
	WallRuns  []float64 `json:"wall_ms_runs"`
	ProcessMS float64   `json:"process_ms"`
	// Ratio is the median of each round's pass over its walk.
	Ratio     float64   `json:"ratio_to_walk,omitempty"`
	RatioRuns []float64 `json:"ratio_runs,omitempty"`
	// PeakRSSBytes is the largest VmHWM of the runs, PeakAnonBytes the
	// largest RssAnon read.
	PeakRSSBytes  int64 `json:"peak_rss_bytes"`
	PeakAnonBytes int64 `json:"peak_anon_bytes"`
	Holdings      int   `json:"holdings"`
	Released      int   `json:"released,omitempty"`
	Deferred      int   `json:"deferred,omitempty"`
	TasksUpdated  int   `json:"tasks_updated,omitempty"`
	// RedisLoad is the pass's own count (the JSON report's redis_load),
	// Server what the server's accounts say of the median run.
	RedisLoad reportLoad `json:"redis_load"`
	Server    ServerLoad `json:"server"`
}

// reportLoad is the JSON report's redis_load.
type reportLoad struct {
	KeysScanned int64   `json:"keys_scanned"`
	ScanCalls   int64   `json:"scan_calls"`
	Commands    int64   `json:"commands"`
	RoundTrips  int64   `json:"round_trips"`
	WaitSeconds float64 `json:"redis_wait_seconds"`
}

// runScale measures every row that -cases matches, one after the other,
// each on a redis-server and a database of its own.
func runScale(ctx context.Context, o options, stdout io.Writer, logf func(string, ...any)) error {
	if o.render != "" {
		return renderScale(o.render, stdout)
	}
	only, err := regexp.Compile(o.cases)
	if err != nil {
		return fmt.Errorf("-cases: %w", err)
	}
	bin, cleanup, err := reaperBinary(ctx, o.binary)
	if err != nil {
		return err
	}
	defer cleanup()
	res := &ScaleResults{Machine: describeMachine(), LimitMiB: rssLimit >> 20, BoundMS: ms(callBound), Runs: o.runs, ScanCount: o.scanCount, BatchSize: o.batchSize}
	for _, row := range scaleRows {
		if !only.MatchString(row.name) {
			continue
		}
		ro := o
		ro.passLimit = rssLimit
		row.set(&ro)
		r, err := measureScaleRow(ctx, ro, row, bin, &res.Machine, logf)
		if err != nil {
			return fmt.Errorf("row %s: %w", row.name, err)
		}
		res.Rows = append(res.Rows, r)
		// Each row's figures as soon as it is done: a long table is not lost
		// with its last row.
		if o.jsonPath != "" {
			if err := writeJSON(o.jsonPath, res); err != nil {
				return err
			}
		}
	}
	return writeScaleMarkdown(stdout, res)
}

// scaleFleet is one row's fleet on its own servers.
type scaleFleet struct {
	srv      *ownRedis
	pool     *pgxpool.Pool
	dbURL    string
	manifest *sim.FleetManifest
}

func measureScaleRow(ctx context.Context, o options, row scaleRow, bin string, machine *Machine, logf func(string, ...any)) (ScaleRow, error) {
	out := ScaleRow{Name: row.name, Factor: row.factor}
	if o.passLimit != rssLimit {
		out.LimitMiB = int(o.passLimit >> 20)
	}
	out.DBTimeoutS = o.passDBTimeout.Seconds()
	srv, err := startOwnRedis()
	if err != nil {
		return out, err
	}
	defer srv.close()
	if err := loadReleaseScript(ctx, srv.rdb); err != nil {
		return out, err
	}
	pool, dbURL, drop, err := benchDatabase(ctx, o.databaseURL)
	if err != nil {
		return out, err
	}
	defer drop()
	machine.fill(ctx, srv.rdb, pool)

	logf("%s: building %d unrelated keys, %d task locks, %d owners, %d domains, %d waiting tasks", row.name, o.unrelated, o.taskLocks, o.owners, o.domains, o.queued)
	m, took, err := buildFleet(ctx, srv.rdb, pool, o)
	if err != nil {
		return out, err
	}
	keys := srv.rdb.DBSize(ctx).Val()
	out.Fleet = fleetFigures(o, m, keys, took)
	out.Fleet.ScaledUnrelated = 0
	out.MembersPerSet = largestSet(ctx, srv.rdb, m)
	logf("%s: built %d keys in %v", row.name, keys, took.Round(time.Millisecond))
	f := &scaleFleet{srv: srv, pool: pool, dbURL: dbURL, manifest: m}

	var audits []scaleRun
	for round := range o.runs {
		w, err := f.walk(ctx, o)
		if err != nil {
			return out, err
		}
		out.Walk = append(out.Walk, w.wallMS)
		if round == 0 || w.wallMS == median(out.Walk) {
			out.WalkServer = w.server
		}
		out.LockKeys = w.lockKeys
		a, err := f.pass(ctx, bin, "audit", o)
		if err != nil {
			return out, err
		}
		a.ratio = a.pass.WallMS / w.wallMS
		audits = append(audits, a)
		logf("%s: round %d/%d walk %.0f ms, audit %.0f ms (%.2f×), peak RSS %s", row.name, round+1, o.runs, w.wallMS, a.pass.WallMS, a.ratio, mib(uint64(a.pass.PeakRSSBytes)))
	}
	out.WalkMS = round2(median(out.Walk))
	out.Audit = summariseScale(audits)
	once, err := f.pass(ctx, bin, "once", o)
	if err != nil {
		return out, err
	}
	once.pass.Ratio = round2(once.pass.WallMS / out.WalkMS)
	out.Once = once.pass
	logf("%s: once %.0f ms (%.2f× the walk), peak RSS %s, slowest call %d µs (%s), %d released, %d deferred", row.name, once.pass.WallMS, once.pass.Ratio,
		mib(uint64(once.pass.PeakRSSBytes)), once.pass.Server.SlowestUS, once.pass.Server.Slowest, once.pass.Released, once.pass.Deferred)
	return out, nil
}

// largestSet is the number of members of the largest shared set of the
// fleet's domains.
func largestSet(ctx context.Context, rdb *redis.Client, m *sim.FleetManifest) int64 {
	var most int64
	for _, d := range m.DomainIDs {
		most = max(most, rdb.SCard(ctx, sim.ResourceKeyPrefix+sim.DomainPRN(d)).Val())
	}
	return most
}

// scaleRun is one measured run of a walk or a pass.
type scaleRun struct {
	wallMS   float64
	lockKeys int
	server   ServerLoad
	pass     ScalePass
	ratio    float64
}

// walk is the baseline walk, in this process, on the row's server.
func (f *scaleFleet) walk(ctx context.Context, o options) (scaleRun, error) {
	done, err := f.srv.measureServer(ctx)
	if err != nil {
		return scaleRun{}, err
	}
	start := time.Now()
	w, err := baselineWalk(ctx, f.srv.rdb, o.scanCount, o.batchSize)
	wall := time.Since(start)
	if err != nil {
		return scaleRun{}, err
	}
	load, err := done()
	return scaleRun{wallMS: ms(wall), lockKeys: w.lockKeys, server: load}, err
}

func summariseScale(runs []scaleRun) ScalePass {
	var ratios, walls []float64
	for _, r := range runs {
		ratios, walls = append(ratios, round2(r.ratio)), append(walls, r.pass.WallMS)
	}
	med := runs[0]
	for _, r := range runs {
		if r.pass.WallMS == median(walls) || len(runs)%2 == 0 && r.pass.WallMS <= median(walls) && r.pass.WallMS > med.pass.WallMS {
			med = r
		}
	}
	p := med.pass
	p.WallMS, p.WallRuns, p.Ratio, p.RatioRuns = median(walls), walls, round2(median(ratios)), ratios
	for _, r := range runs {
		p.PeakRSSBytes, p.PeakAnonBytes = max(p.PeakRSSBytes, r.pass.PeakRSSBytes), max(p.PeakAnonBytes, r.pass.PeakAnonBytes)
		p.Server.OverBound = max(p.Server.OverBound, r.pass.Server.OverBound)
		if r.pass.Server.SlowestUS > p.Server.SlowestUS {
			p.Server.SlowestUS, p.Server.Slowest = r.pass.Server.SlowestUS, r.pass.Server.Slowest
		}
	}
	return p
}

// scaleRuns is the scale scenario's rounds of walk and audit per row unless
// -runs says otherwise.
const scaleRuns = 3

// renderScale writes the tables of a scale run's JSON again: the rows done
// by a run that was stopped before its last.
func renderScale(path string, stdout io.Writer) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var res ScaleResults
	if err := json.Unmarshal(raw, &res); err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	return writeScaleMarkdown(stdout, &res)
}
