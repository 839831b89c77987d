package judge

import (
	"fmt"
	"time"
)

// Defaults of Policy, as verdicts.md gives them.
const (
	DefaultHeartbeatGrace  = 30 * time.Second
	DefaultFinishedGrace   = 60 * time.Second
	DefaultConfirmAfter    = 2 * time.Minute
	DefaultMaxDeadFraction = 0.5
	DefaultMinWorkers      = 3
	DefaultMaxReleases     = 10000
	DefaultMaxTaskUpdates  = 1000
	DefaultLostRunning     = StateCanceled
	DefaultOrphanedWaiting = WaitingRequeue
)

// What to do with a waiting task whose claim belongs to a dead worker.
const (
	WaitingRequeue = "requeue"
	WaitingCancel  = "cancel"
)

// Policy is everything the judge needs besides the snapshot.
type Policy struct {
	// HeartbeatGrace is how long past its ttl a heartbeat may be late before
	// its owner counts as dead. Default 30s.
	HeartbeatGrace time.Duration
	// FinishedGrace is how long after a task finished its locks are left for
	// the worker to release them itself. Default 60s.
	FinishedGrace time.Duration
	// ConfirmAfter is how long a suspect must persist before it is released.
	// Default 2m.
	ConfirmAfter time.Duration
	// LostRunning is the state a lost running task is moved to: canceled
	// (default) or failed (pulpcore's own choice).
	LostRunning string
	// OrphanedWaiting is what happens to a waiting task claimed by a dead
	// worker: requeue (default, app_lock_id = NULL) or cancel.
	OrphanedWaiting string
	// MaxDeadFraction and MinWorkers form the mass-death guard: when more than
	// this fraction of at least MinWorkers worker rows is dead, nothing is
	// released on dead grounds and no task is updated. Defaults 0.5 and 3.
	MaxDeadFraction float64
	MinWorkers      int
	// Force overrides the mass-death guard.
	Force bool
	// MaxReleases and MaxTaskUpdates bound one pass; the rest waits for the
	// next one. Defaults 10000 and 1000.
	MaxReleases    int
	MaxTaskUpdates int
	// Kubernetes are the settings of the pod evidence rules (kubernetes.hung_worker_grace).
	Kubernetes PodRules
}

// DefaultPolicy returns the policy with every default of verdicts.md.
func DefaultPolicy() Policy {
	return Policy{
		HeartbeatGrace:  DefaultHeartbeatGrace,
		FinishedGrace:   DefaultFinishedGrace,
		ConfirmAfter:    DefaultConfirmAfter,
		LostRunning:     DefaultLostRunning,
		OrphanedWaiting: DefaultOrphanedWaiting,
		MaxDeadFraction: DefaultMaxDeadFraction,
		MinWorkers:      DefaultMinWorkers,
		MaxReleases:     DefaultMaxReleases,
		MaxTaskUpdates:  DefaultMaxTaskUpdates,
		Kubernetes:      PodRules{HungWorkerGrace: DefaultHungWorkerGrace, ClockSkew: DefaultClockSkew},
	}
}

// Validate reports the first setting a user could have got wrong.
func (p Policy) Validate() error {
	switch {
	case p.HeartbeatGrace < 0:
		return fmt.Errorf("heartbeat_grace must not be negative, got %v", p.HeartbeatGrace)
	case p.FinishedGrace < 0:
		return fmt.Errorf("finished_grace must not be negative, got %v", p.FinishedGrace)
	case p.ConfirmAfter < 0:
		return fmt.Errorf("confirm_after must not be negative, got %v", p.ConfirmAfter)
	case p.LostRunning != StateCanceled && p.LostRunning != StateFailed:
		return fmt.Errorf("lost_running must be canceled or failed, got %q", p.LostRunning)
	case p.OrphanedWaiting != WaitingRequeue && p.OrphanedWaiting != WaitingCancel:
		return fmt.Errorf("orphaned_waiting must be requeue or cancel, got %q", p.OrphanedWaiting)
	case p.MaxDeadFraction < 0 || p.MaxDeadFraction > 1:
		return fmt.Errorf("max_dead_fraction must be between 0 and 1, got %v", p.MaxDeadFraction)
	case p.MinWorkers < 0:
		return fmt.Errorf("min_workers must not be negative, got %d", p.MinWorkers)
	case p.MaxReleases < 0:
		return fmt.Errorf("max_releases must not be negative, got %d", p.MaxReleases)
	case p.MaxTaskUpdates < 0:
		return fmt.Errorf("max_task_updates must not be negative, got %d", p.MaxTaskUpdates)
	case p.Kubernetes.HungWorkerGrace < 0:
		return fmt.Errorf("kubernetes.hung_worker_grace must not be negative, got %v", p.Kubernetes.HungWorkerGrace)
	case p.Kubernetes.ClockSkew < 0:
		return fmt.Errorf("kubernetes clock-skew margin must not be negative, got %v", p.Kubernetes.ClockSkew)
	}
	return nil
}
