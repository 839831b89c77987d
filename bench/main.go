// Command bench measures lock-reaper against a production-size keyspace: it
// builds a fleet in its own Redis logical database and its own PostgreSQL
// database, times a baseline walk of the keyspace and the reaper's passes,
// prints a markdown table and writes JSON, and removes everything it wrote.
//
//	go run ./bench                       # the default fleet, about 2 minutes
//	go run ./bench -unrelated 1000 -task-locks 100 -owners 10 -runs 1
//	go run ./bench -cpuprofile cpu.pprof -profile audit
//	go run ./bench -scenario unjam       # each death's release, after the moment the rules allow it: heartbeats only, pods listed, watched (stalled, forbidden); about 8 minutes (the watched deleted-pod and restart cases in real time, the others scaled 20×)
//	go run ./bench -scenario status-page # each status page's server time over 200,000 holdings
//	go run ./bench -scenario incident    # the incident of 2026-07-24 among 1,000,000 keys: once against one walk, audit against the baseline read
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// options are the command's flags.
type options struct {
	scenario string
	binary   string
	binaryB  string
	shape    string

	timeScale       int
	trials          int
	aliveTrials     int
	hungWorkerGrace time.Duration
	restartDelay    time.Duration
	unjamCases      string
	watchTimeScale  int
	watchTrials     int

	unrelated        int
	taskLocks        int
	exclusivePerTask int
	domains          int
	owners           int
	deadFraction     float64
	finishedFraction float64
	legacyFraction   float64
	queued           int
	decoys           int

	scanCount   int
	batchSize   int
	runs        int
	scaleFactor int

	staleRegistry  int
	processRuns    bool
	longest        bool
	daemonSpan     time.Duration
	pages          bool
	foreignHistory int
	cases          string
	idleSpan       time.Duration
	idleWatch      bool
	render         string
	contend        int
	phaseTimes     bool
	// passLimit is the memory limit (REAPER_MEMORY_LIMIT) of the scale
	// scenario's passes: the chart's 128Mi unless a row needs more.
	passLimit int64
	// passDBTimeout, when set, is the scale scenario's passes'
	// database.timeout (REAPER_DATABASE_TIMEOUT) instead of the default.
	passDBTimeout time.Duration
	// deferOK says the scale row's once may defer holdings that a call
	// cannot check (more than ReserverCallLimit tasks reserve a resource):
	// released and deferred then make the fleet's stale holdings.
	deferOK bool

	jsonPath   string
	cpuProfile string
	memProfile string
	profile    string

	redisURL    string
	databaseURL string
}

func parseOptions(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.scenario, "scenario", scenarioFleet, "fleet: the production-size fleet, in-process phases; incident: the incident of 2026-07-24 among a busy fleet, the real binary's once and audit against one walk of the keyspace in the same rounds; dead-owner: one dead owner holding every lock, peak RSS of the real binary; unjam: time from a worker's death to its locks' release, with and without Kubernetes evidence; status-page: server time of each status page over 200,000 stale holdings; scale: how a pass's wall time, memory and load on Redis grow, one factor of the incident fleet at a time, each row with its walk; idle: run as a sidecar with nothing to do, its CPU and RSS over -idle-span")
	fs.StringVar(&o.shape, "shape", shapeRunning, "dead-owner: running (the owner dead, its tasks running) or finished (the owner alive, its tasks finished)")
	fs.StringVar(&o.binary, "binary", "", "dead-owner, scale, idle: the lock-reaper binary to measure (default: built from this module)")
	fs.IntVar(&o.timeScale, "time-scale", 20, "unjam: divide every duration by this factor (it must divide the 1m schedule into whole seconds)")
	fs.IntVar(&o.trials, "trials", 16, "unjam: deaths measured per case")
	fs.IntVar(&o.aliveTrials, "alive-trials", 2, "unjam: trials of the live worker whose heartbeats stopped (each lasts hung_worker_grace)")
	fs.DurationVar(&o.hungWorkerGrace, "hung-worker-grace", 10*time.Minute, "unjam: kubernetes.hung_worker_grace, before scaling")
	fs.DurationVar(&o.restartDelay, "restart-delay", time.Second, "unjam: from a kill to the kubelet's restart of the container, before scaling")
	fs.StringVar(&o.unjamCases, "unjam-cases", unjamCasesAll, "unjam: all, list (pods listed each pass, and no Kubernetes) or watch (pods watched through a stand-in API server, passes woken by the kubelet's reports)")
	fs.IntVar(&o.watchTimeScale, "watch-time-scale", 1, "unjam: the time scale of the watch cases; the API's timestamps have whole seconds, so a scaled run would blur the container times it compares")
	fs.IntVar(&o.watchTrials, "watch-trials", 3, "unjam: deaths measured per watch case (node crash and alive-but-hung: one)")
	fs.IntVar(&o.unrelated, "unrelated", 1_000_000, "unrelated keys in Redis (a shared cache's)")
	fs.IntVar(&o.taskLocks, "task-locks", 100_000, "task locks, one task row each")
	fs.IntVar(&o.exclusivePerTask, "exclusive-per-task", 1, "exclusive resource locks per task")
	fs.IntVar(&o.domains, "domains", 50, "shared domain sets")
	fs.IntVar(&o.owners, "owners", 500, "worker processes holding the locks")
	fs.Float64Var(&o.deadFraction, "dead-fraction", 0.1, "fraction of the owners that are dead")
	fs.Float64Var(&o.finishedFraction, "finished-fraction", 0.02, "fraction of the task locks whose task completed long ago (leaked)")
	fs.Float64Var(&o.legacyFraction, "legacy-fraction", 0, "fraction of the task locks without owner registry entries")
	fs.IntVar(&o.queued, "queued", 0, "waiting, unclaimed tasks without locks")
	fs.IntVar(&o.decoys, "decoys", 0, "keys under the lock prefixes that are not locks")
	fs.IntVar(&o.scanCount, "scan-count", 1000, "COUNT of each SCAN (redis.scan_count)")
	fs.IntVar(&o.batchSize, "batch-size", 1000, "keys per pipelined read, holdings per release call (redis.batch_size)")
	fs.IntVar(&o.runs, "runs", 5, "rounds of the read-only phases; medians are reported (scale: 3)")
	fs.IntVar(&o.scaleFactor, "scale-factor", 10, "grow the unrelated keys by this factor for the flatness check (1: skip)")
	fs.IntVar(&o.staleRegistry, "stale-registry", 1_000_000, "dead-owner: stale entries added to the owner's registry for the second longest-command pass (0: only the pass as built)")
	fs.StringVar(&o.cases, "cases", "", "dead-owner: measure only the runs whose name matches this regular expression (e.g. '^(run|status)'); scale: only the rows (e.g. '^(incident|unrelated-10M|backlog-20k)$')")
	fs.StringVar(&o.render, "render", "", "scale, incident: write the tables of this JSON of an earlier run (scale: one stopped before its last row) and measure nothing")
	fs.DurationVar(&o.idleSpan, "idle-span", 10*time.Minute, "idle: how long run is measured")
	fs.BoolVar(&o.idleWatch, "idle-watch", false, "idle: run watches the workers' pods on a stand-in API server (the unjam scenario's)")
	fs.DurationVar(&o.daemonSpan, "daemon-span", 45*time.Second, "dead-owner: how long run and status are measured, over several passes, before SIGTERM (0: skip them)")
	fs.BoolVar(&o.pages, "pages", true, "dead-owner: fetch every status page through the runs of run and status, during the passes and between them")
	fs.IntVar(&o.foreignHistory, "foreign-history", 0, "dead-owner: entries of 2 MB written into the history of passes by someone else before each run of run and status")
	fs.BoolVar(&o.longest, "longest", true, "dead-owner: measure the longest Redis command of a pass (false: only the binary's runs)")
	fs.BoolVar(&o.processRuns, "process-runs", true, "dead-owner: measure the binary's runs (false: only the longest Redis command of a pass)")
	fs.StringVar(&o.binaryB, "binary-b", "", "incident: a second lock-reaper binary, run in the same rounds as -binary, in turns (A/B)")
	fs.IntVar(&o.contend, "contend", 0, "incident: busy loops (processes) run beside the rounds, to contend the CPU")
	fs.BoolVar(&o.phaseTimes, "phase-times", true, "incident: after the rounds, run an audit and a once in this process -runs times each and note when each phase began (profiled with -cpuprofile)")
	fs.StringVar(&o.jsonPath, "json", "", "write the results as JSON to this file")
	fs.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the -profile phase to this file")
	fs.StringVar(&o.memProfile, "memprofile", "", "write heap profiles of the -profile phase to this file and FILE.base (compare with pprof -base)")
	fs.StringVar(&o.profile, "profile", phaseAudit, "phase to profile: baseline, audit, registry-only, once")
	fs.StringVar(&o.redisURL, "redis-url", envOr("REAPER_TEST_REDIS_URL", defaultRedisURL), "Redis server; a free logical database 1-15 is claimed")
	fs.StringVar(&o.databaseURL, "database-url", envOr("REAPER_TEST_DATABASE_URL", defaultDatabaseURL), "PostgreSQL server; a throwaway database is created")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if err := o.scenarioDefaults(fs); err != nil {
		return o, err
	}
	switch {
	case o.runs < 1:
		return o, errors.New("-runs must be at least 1")
	case o.scaleFactor < 1:
		return o, errors.New("-scale-factor must be at least 1")
	case o.scanCount < 1 || o.batchSize < 1:
		return o, errors.New("-scan-count and -batch-size must be positive")
	case o.taskLocks > math.MaxInt32/4:
		return o, errors.New("-task-locks is too large")
	}
	switch o.profile {
	case phaseBaseline, phaseAudit, phaseRegistry, phaseOnce:
	default:
		return o, fmt.Errorf("-profile must be one of %s, %s, %s, %s", phaseBaseline, phaseAudit, phaseRegistry, phaseOnce)
	}
	return o, nil
}

func main() {
	o, err := parseOptions(os.Args[1:], os.Stderr)
	if err != nil {
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintf(os.Stderr, "bench: %v\n", err)
		stop()
		os.Exit(1)
	}
}

// scenarioDefaults gives the dead-owner scenario its own sizes where the
// flags left the fleet's, and checks the unjam scenario's flags.
func (o *options) scenarioDefaults(fs *flag.FlagSet) error {
	switch o.scenario {
	case scenarioFleet:
		return nil
	case scenarioDeadOwner:
		if o.shape != shapeRunning && o.shape != shapeFinished {
			return fmt.Errorf("-shape must be %s or %s", shapeRunning, shapeFinished)
		}
	case scenarioUnjam:
		return o.validateUnjam()
	case scenarioStatusPage:
		return nil
	case scenarioScale:
		if !setFlags(fs)["runs"] {
			o.runs = scaleRuns
		}
		return nil
	case scenarioIdle:
		return nil
	case scenarioIncident:
		set := setFlags(fs)
		if !set["task-locks"] {
			o.taskLocks = incidentLiveTasks
		}
		if !set["unrelated"] {
			o.unrelated = incidentUnrelated
		}
		return nil
	default:
		return fmt.Errorf("-scenario must be %s, %s, %s, %s, %s, %s or %s", scenarioFleet, scenarioIncident, scenarioDeadOwner, scenarioUnjam, scenarioStatusPage, scenarioScale, scenarioIdle)
	}
	set := setFlags(fs)
	if !set["task-locks"] {
		o.taskLocks = deadOwnerTaskLocks
	}
	if !set["unrelated"] {
		o.unrelated = deadOwnerUnrelated
	}
	return nil
}

// setFlags are the flags the command line set.
func setFlags(fs *flag.FlagSet) map[string]bool {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	return set
}
