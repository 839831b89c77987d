package reaper

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/lock-reaper/lock-reaper/internal/humantext"

	"github.com/lock-reaper/lock-reaper/heartbeat"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
	"github.com/lock-reaper/lock-reaper/reaper/redislocks"
)

// Config is the reaper's configuration: every setting a pass reads, the
// judge's Policy among them. Package config binds the configuration keys
// (named in the field comments) onto these fields; DefaultConfig holds every
// default and Validate every check.
type Config struct {
	// Policy is what the judge reads: heartbeat_grace, heartbeat_recheck, finished_grace,
	// confirm_after, lost_running, orphaned_waiting, max_dead_fraction,
	// min_workers, max_releases, max_task_updates, and in Policy.Kubernetes
	// kubernetes.hung_worker_grace and kubernetes.clock_margin (ClockSkew).
	// Force is no key: a flag of the commands that allow it.
	judge.Policy

	// ScanCount is the COUNT hint of each SCAN call (redis.scan_count).
	ScanCount int
	// BatchSize is the number of keys per pipelined read, of holdings per
	// release batch and of tasks per update statement (redis.batch_size).
	BatchSize int
	// ReleaseCallHoldings bounds the work of one release (Lua) call, in
	// holdings: a registry entry its new-task checks count costs a tenth of
	// one, a reserving task an eighth (redis.release_call_holdings;
	// redislocks/release_call.go).
	ReleaseCallHoldings int
	// RedisTimeout is the deadline of each Redis call (redis.timeout).
	RedisTimeout time.Duration
	// DatabaseTimeout is the deadline of each database statement
	// (database.timeout).
	DatabaseTimeout time.Duration
	// SuspectTTL is the expiry of the remembered suspects (suspect_ttl).
	SuspectTTL time.Duration
	// CoordinateWithPulpcore also takes pulpcore's cleanup advisory lock for
	// the pass, so the reaper never races pulpcore's in-worker cleanup
	// (coordinate_with_pulpcore).
	CoordinateWithPulpcore bool
	// KubernetesTimeout bounds the pods list of one pass (kubernetes.timeout).
	KubernetesTimeout time.Duration
	// PodSource, when set, lists the pods whose evidence the judge adds to the
	// heartbeats (kubernetes.enabled); nil judges by heartbeats alone. It is
	// no key: the command opens it.
	PodSource PodSource
}

// Defaults of Config, as docs/verdicts.md and docs/configuration.md give them.
const (
	DefaultHeartbeatGrace  = 30 * time.Second
	DefaultFinishedGrace   = 60 * time.Second
	DefaultConfirmAfter    = 2 * time.Minute
	DefaultMaxDeadFraction = 0.5
	DefaultMinWorkers      = 3
	DefaultMaxReleases     = 10000
	DefaultMaxTaskUpdates  = 1000
	DefaultLostRunning     = judge.StateCanceled
	DefaultOrphanedWaiting = judge.WaitingRequeue
	DefaultHungWorkerGrace = 10 * time.Minute
	// DefaultClockSkew (kubernetes.clock_margin) covers NTP-synchronised
	// nodes with room to spare; a worker's rows and its container's times
	// come from the same node's clock unless the pod was recreated on
	// another node.
	DefaultClockSkew = 2 * time.Second

	DefaultScanCount = 1000
	DefaultBatchSize = 1000
	// DefaultReleaseCallHoldings keeps a release call within a few
	// milliseconds of Redis's time (BENCHMARKS.md).
	DefaultReleaseCallHoldings = redislocks.DefaultCallHoldings
	DefaultRedisTimeout        = 5 * time.Second
	DefaultDatabaseTimeout     = 10 * time.Second
	DefaultSuspectTTL          = time.Hour
	DefaultKubernetesTimeout   = 5 * time.Second
)

// MaxClockMargin bounds kubernetes.clock_margin: NTP keeps nodes within
// milliseconds, and a wider margin would let the hold rule take a container
// started that long after a row for the row's process.
const MaxClockMargin = 30 * time.Second

// DefaultConfig returns the configuration with every default: the only
// place the defaults of the settings a pass reads are given, the judge's
// among them.
func DefaultConfig() Config {
	return Config{
		Policy: judge.Policy{
			HeartbeatGrace:  DefaultHeartbeatGrace,
			FinishedGrace:   DefaultFinishedGrace,
			ConfirmAfter:    DefaultConfirmAfter,
			LostRunning:     DefaultLostRunning,
			OrphanedWaiting: DefaultOrphanedWaiting,
			MaxDeadFraction: DefaultMaxDeadFraction,
			MinWorkers:      DefaultMinWorkers,
			MaxReleases:     DefaultMaxReleases,
			MaxTaskUpdates:  DefaultMaxTaskUpdates,
			Kubernetes:      heartbeat.PodPolicy{HungWorkerGrace: DefaultHungWorkerGrace, ClockSkew: DefaultClockSkew},
		},
		ScanCount:              DefaultScanCount,
		BatchSize:              DefaultBatchSize,
		ReleaseCallHoldings:    DefaultReleaseCallHoldings,
		RedisTimeout:           DefaultRedisTimeout,
		DatabaseTimeout:        DefaultDatabaseTimeout,
		SuspectTTL:             DefaultSuspectTTL,
		CoordinateWithPulpcore: true,
		KubernetesTimeout:      DefaultKubernetesTimeout,
	}
}

// SettingError is one setting of Config with a bad value, named by its
// configuration key.
type SettingError struct {
	Key string // e.g. heartbeat_grace
	// Problem says what is wrong, without the key: "must not be negative,
	// got -1s".
	Problem string
}

func (e *SettingError) Error() string { return e.Key + " " + e.Problem }

// Validate checks every setting and the relations between them. It reports
// every problem, joined: each bad setting as a *SettingError, a relation
// between settings as an error naming both keys.
func (c Config) Validate() error {
	var errs []error
	check := func(key string, err error) {
		if err != nil {
			errs = append(errs, &SettingError{Key: key, Problem: err.Error()})
		}
	}
	check("redis.scan_count", positive(c.ScanCount))
	check("redis.batch_size", positive(c.BatchSize))
	check("redis.release_call_holdings", positive(c.ReleaseCallHoldings))
	check("redis.timeout", positive(c.RedisTimeout))
	check("database.timeout", positive(c.DatabaseTimeout))
	check("heartbeat_grace", nonNegative(c.HeartbeatGrace))
	check("heartbeat_recheck", nonNegative(c.HeartbeatRecheck))
	check("finished_grace", nonNegative(c.FinishedGrace))
	check("confirm_after", nonNegative(c.ConfirmAfter))
	check("suspect_ttl", positive(c.SuspectTTL))
	check("lost_running", oneOf(c.LostRunning, judge.StateCanceled, judge.StateFailed))
	check("orphaned_waiting", oneOf(c.OrphanedWaiting, judge.WaitingRequeue, judge.WaitingCancel))
	if !(c.MaxDeadFraction >= 0 && c.MaxDeadFraction <= 1) {
		check("max_dead_fraction", fmt.Errorf("must be between 0 and 1, got %v", c.MaxDeadFraction))
	}
	check("min_workers", nonNegative(c.MinWorkers))
	check("max_releases", nonNegative(c.MaxReleases))
	check("max_task_updates", nonNegative(c.MaxTaskUpdates))
	if d := c.Kubernetes.ClockSkew; d < 0 || d > MaxClockMargin {
		check("kubernetes.clock_margin", fmt.Errorf("must be between 0s and %s", MaxClockMargin))
	}
	check("kubernetes.hung_worker_grace", nonNegative(c.Kubernetes.HungWorkerGrace))
	check("kubernetes.timeout", positive(c.KubernetesTimeout))
	// A suspect must outlive the wait for its confirmation, otherwise it
	// expires before it can ever be confirmed and nothing is released.
	if c.SuspectTTL <= c.ConfirmAfter {
		errs = append(errs, fmt.Errorf("suspect_ttl (%s) must be greater than confirm_after (%s)",
			humantext.Setting(c.SuspectTTL), humantext.Setting(c.ConfirmAfter)))
	}
	return errors.Join(errs...)
}

func positive[T int | time.Duration](v T) error {
	if v <= 0 {
		return fmt.Errorf("must be greater than 0, got %s", show(v))
	}
	return nil
}

func nonNegative[T int | time.Duration](v T) error {
	if v < 0 {
		return fmt.Errorf("must not be negative, got %s", show(v))
	}
	return nil
}

func oneOf(s string, allowed ...string) error {
	for _, a := range allowed {
		if s == a {
			return nil
		}
	}
	return fmt.Errorf("invalid value %q: want one of %s", s, strings.Join(allowed, ", "))
}

func show[T int | time.Duration](v T) string {
	if d, ok := any(v).(time.Duration); ok {
		return humantext.Setting(d)
	}
	return strconv.Itoa(int(v))
}
