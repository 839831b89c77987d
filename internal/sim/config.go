package sim

import (
	"fmt"
	"log/slog"
	"time"
)

// Defaults of Config. The TTLs and the grace are pulpcore's and lock-reaper's
// production values; tests shorten them.
const (
	DefaultWorkers           = 3
	DefaultAPIs              = 1
	DefaultHostname          = "pulp"
	DefaultWorkerTTL         = 30 * time.Second
	DefaultAPITTL            = 120 * time.Second
	DefaultHeartbeatGrace    = 30 * time.Second
	DefaultMinTaskDuration   = 20 * time.Millisecond
	DefaultMaxTaskDuration   = 100 * time.Millisecond
	DefaultImmediateDuration = 10 * time.Millisecond
	DefaultPollInterval      = 20 * time.Millisecond
	DefaultFetchLimit        = 20
	DefaultRepositories      = 8
	DefaultSlowDBDelay       = 50 * time.Millisecond
)

// Config of a Fleet. A zero field takes the default named after it.
type Config struct {
	// Workers is how many worker processes start [DefaultWorkers].
	Workers int
	// APIs is how many API processes start [DefaultAPIs]; there is always at
	// least one, because cancellation and immediate tasks go through an API.
	APIs int
	// Hostname names the processes: worker i is "<pid>@<Hostname>-worker-<i>",
	// API i "<pid>@<Hostname>-api-<i>", like pulpcore's "{pid}@{hostname}"
	// [DefaultHostname]. Two fleets on one database need different hostnames.
	Hostname string
	// WorkerTTL is the workers' core_appstatus.ttl [DefaultWorkerTTL]. Workers
	// beat every WorkerTTL/3, with the database clock.
	WorkerTTL time.Duration
	// APITTL is the API processes' ttl [DefaultAPITTL].
	APITTL time.Duration
	// HeartbeatGrace must equal the reaper's heartbeat_grace
	// [DefaultHeartbeatGrace]. A process whose last heartbeat is older than its
	// ttl plus this grace may legitimately lose its locks, so such a loss is
	// not a Violation; random heartbeat-delay faults stay below it.
	HeartbeatGrace time.Duration
	// MinTaskDuration and MaxTaskDuration bound how long a deferred task
	// executes, drawn uniformly [DefaultMinTaskDuration, DefaultMaxTaskDuration].
	MinTaskDuration time.Duration
	MaxTaskDuration time.Duration
	// ImmediateDuration is how long an immediate task executes in its API
	// process [DefaultImmediateDuration].
	ImmediateDuration time.Duration
	// PollInterval is how long an idle worker sleeps before fetching again, and
	// how often a running task checks for a cancel request and for its locks
	// [DefaultPollInterval].
	PollInterval time.Duration
	// FetchLimit is how many waiting tasks one fetch considers [DefaultFetchLimit].
	FetchLimit int
	// Repositories is the number of repository PRNs random tasks choose from
	// [DefaultRepositories]; fewer repositories mean more lock contention.
	Repositories int
	// SharedRepoFraction of random tasks reserve their repository shared
	// instead of exclusive (think publish versus sync).
	SharedRepoFraction float64
	// DomainExclusiveFraction of random tasks reserve the domain exclusively,
	// which waits for every task of the domain (think reclaim_space).
	DomainExclusiveFraction float64
	// DomainID is the domain of random tasks [DefaultDomainID].
	DomainID string
	// ImmediateInTransaction runs an immediate task inside the transaction that
	// inserts its row, as a request transaction does: its lock is visible in
	// Redis before its task row is visible to anyone else.
	ImmediateInTransaction bool
	// RestartReleasesOwnLocks makes a restarted worker first release every
	// lock registered under its name, as pulpcore does. Off by default so that
	// the reaper is what cleans up after a restart.
	RestartReleasesOwnLocks bool
	// WorkerVersions are the plugin versions the workers run
	// (core_appstatus.versions) unless AddWorkerWithVersions says otherwise;
	// nil for none. A worker runs only the tasks whose versions it is
	// compatible with (Compatible); it leaves the others claimed, as
	// pulpcore's does: stranded.
	WorkerVersions Versions
	// RestartAfterShutdown restarts a worker that shut itself down (a failed
	// heartbeat write or Redis PING) under its old name after this long, as
	// Kubernetes restarts its container, retrying until the restart
	// succeeds; zero leaves it down.
	RestartAfterShutdown time.Duration
	// DBDelay is slept before every database statement of the fleet, to
	// simulate a slow database; SetDBDelay changes it at run time. Keep it well
	// below the reaper's confirm_after: a worker between acquire and claim for
	// longer than that looks exactly like a leak.
	DBDelay time.Duration
	// Seed seeds the fleet's PCG random source (zero is a valid seed), so a
	// run's choices of tasks, durations and faults can be repeated; goroutine
	// scheduling still varies.
	Seed uint64
	// Dispatch creates and cancels tasks automatically; zero means none.
	Dispatch DispatchConfig
	// Faults are injected at random at these rates; zero means none.
	Faults FaultRates
	// Pods runs the processes in simulated Kubernetes pods (pods.go); off by
	// default. Hostname then names the pods' Deployments.
	Pods PodConfig
	// Logger receives the fleet's errors and events [discard].
	Logger *slog.Logger
}

// DispatchConfig drives the fleet's own task dispatcher.
type DispatchConfig struct {
	// Rate is how many tasks per second are created.
	Rate float64
	// ImmediateFraction of created tasks are immediate: an API process runs
	// them itself when their locks are free, else they wait for a worker.
	ImmediateFraction float64
	// CancelRate is how many random incomplete tasks per second are canceled.
	CancelRate float64
}

// FaultRates are probabilities, each per opportunity named in its comment.
// The numbers refer to the leak paths of the protocol description.
type FaultRates struct {
	// LeakBeforeClaim (path 1), per successful acquire: the worker fails
	// before claiming and keeps the locks of a task that stays waiting.
	LeakBeforeClaim float64
	// FinalNoRelease (path 2), per completed task: the task is completed but
	// its locks stay under the live worker.
	FinalNoRelease float64
	// CancelPathError (path 3), per canceled running task: the task ends
	// canceled but the worker's cleanup raises before releasing.
	CancelPathError float64
	// SupervisorError (path 4), per executed task: the supervisor raises, the
	// task ends failed and its locks stay under the live worker.
	SupervisorError float64
	// CancelRace (path 5), per successful acquire: an API cancels the waiting
	// task between the worker's acquire and claim without releasing, and the
	// worker's claim fails without releasing either.
	CancelRace float64
	// ImmediateRelease (path 6), per immediate task: the API cannot release
	// after the task completed; the locks stay under the API process.
	ImmediateRelease float64
	// Kill (path 7), per acquired task: the worker dies (kill -9) right after
	// the acquire, after the claim, or while the task runs.
	Kill float64
	// RestartAfter restarts a randomly killed worker under its old name after
	// this long; zero leaves it dead.
	RestartAfter time.Duration
	// HeartbeatDelay, per heartbeat: the next heartbeat comes late, between
	// ttl + grace/4 and ttl + 3*grace/4 after the previous one, so the process
	// is late but must not be reaped.
	HeartbeatDelay float64
	// SlowDB, per database statement: sleep SlowDBDelay before it.
	SlowDB float64
	// SlowDBDelay is the extra sleep of a SlowDB fault [DefaultSlowDBDelay].
	SlowDBDelay time.Duration
	// HangBeforeStart, per claimed task: its process waits HangFor before
	// set_running (claimed-not-started).
	HangBeforeStart float64
	HangFor         time.Duration
}

func (r FaultRates) rate(kind FaultKind) float64 {
	switch kind {
	case FaultLeakBeforeClaim:
		return r.LeakBeforeClaim
	case FaultFinalNoRelease:
		return r.FinalNoRelease
	case FaultCancelPathError:
		return r.CancelPathError
	case FaultSupervisorError:
		return r.SupervisorError
	case FaultCancelRace:
		return r.CancelRace
	case FaultImmediateRelease:
		return r.ImmediateRelease
	case FaultKill:
		return r.Kill
	case FaultHeartbeatDelay:
		return r.HeartbeatDelay
	case FaultSlowDB:
		return r.SlowDB
	case FaultHangBeforeStart:
		return r.HangBeforeStart
	}
	return 0
}

func (r FaultRates) validate() error {
	for _, k := range randomFaultKinds {
		if p := r.rate(k); p < 0 || p > 1 {
			return fmt.Errorf("sim: config Faults.%s: probability %v outside [0, 1]", k, p)
		}
	}
	if r.RestartAfter < 0 || r.SlowDBDelay < 0 || r.HangFor < 0 {
		return fmt.Errorf("sim: config Faults: negative duration")
	}
	return nil
}

func (r FaultRates) withDefaults() FaultRates {
	if r.SlowDBDelay == 0 {
		r.SlowDBDelay = DefaultSlowDBDelay
	}
	return r
}

func (d DispatchConfig) validate() error {
	if d.Rate < 0 || d.CancelRate < 0 {
		return fmt.Errorf("sim: config Dispatch: negative rate")
	}
	if d.ImmediateFraction < 0 || d.ImmediateFraction > 1 {
		return fmt.Errorf("sim: config Dispatch.ImmediateFraction: %v outside [0, 1]", d.ImmediateFraction)
	}
	return nil
}

// withDefaults fills the zero fields and then checks what a caller could have
// set wrong.
func (c Config) withDefaults() (Config, error) {
	setDefault(&c.Workers, DefaultWorkers)
	setDefault(&c.APIs, DefaultAPIs)
	setDefault(&c.Hostname, DefaultHostname)
	setDefault(&c.WorkerTTL, DefaultWorkerTTL)
	setDefault(&c.APITTL, DefaultAPITTL)
	setDefault(&c.HeartbeatGrace, DefaultHeartbeatGrace)
	setDefault(&c.MinTaskDuration, DefaultMinTaskDuration)
	setDefault(&c.MaxTaskDuration, DefaultMaxTaskDuration)
	setDefault(&c.ImmediateDuration, DefaultImmediateDuration)
	setDefault(&c.PollInterval, DefaultPollInterval)
	setDefault(&c.FetchLimit, DefaultFetchLimit)
	setDefault(&c.Repositories, DefaultRepositories)
	setDefault(&c.DomainID, DefaultDomainID)
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	c.Faults = c.Faults.withDefaults()
	var err error
	if c.Pods, err = c.Pods.withDefaults(); err != nil {
		return c, err
	}

	switch {
	case c.Workers < 0:
		return c, fmt.Errorf("sim: config Workers: %d is negative", c.Workers)
	case c.APIs < 0:
		return c, fmt.Errorf("sim: config APIs: %d is negative", c.APIs)
	case c.WorkerTTL < 0 || c.APITTL < 0 || c.HeartbeatGrace < 0:
		return c, fmt.Errorf("sim: config WorkerTTL/APITTL/HeartbeatGrace: negative duration")
	case c.MinTaskDuration < 0 || c.MaxTaskDuration < c.MinTaskDuration:
		return c, fmt.Errorf("sim: config MinTaskDuration/MaxTaskDuration: need 0 <= min (%v) <= max (%v)", c.MinTaskDuration, c.MaxTaskDuration)
	case c.ImmediateDuration < 0 || c.PollInterval < 0 || c.DBDelay < 0 || c.RestartAfterShutdown < 0:
		return c, fmt.Errorf("sim: config ImmediateDuration/PollInterval/DBDelay: negative duration")
	case c.FetchLimit < 0 || c.Repositories < 0:
		return c, fmt.Errorf("sim: config FetchLimit/Repositories: negative")
	case c.SharedRepoFraction < 0 || c.DomainExclusiveFraction < 0 || c.SharedRepoFraction+c.DomainExclusiveFraction > 1:
		return c, fmt.Errorf("sim: config SharedRepoFraction + DomainExclusiveFraction: need fractions summing to at most 1")
	case !isUUID(c.DomainID):
		return c, fmt.Errorf("sim: config DomainID: %q is not a canonical lowercase UUID", c.DomainID)
	}
	if err := c.Dispatch.validate(); err != nil {
		return c, err
	}
	return c, c.Faults.validate()
}

func setDefault[T comparable](field *T, def T) {
	var zero T
	if *field == zero {
		*field = def
	}
}
