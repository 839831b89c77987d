package judge

import (
	"time"

	"github.com/lock-reaper/lock-reaper/heartbeat"
)

// What to do with a waiting task whose claim belongs to a dead worker.
const (
	WaitingRequeue = "requeue"
	WaitingCancel  = "cancel"
)

// Policy is everything the judge needs besides the snapshot. It holds
// values only: reaper.Config, which embeds it, gives their defaults
// (reaper.DefaultConfig) and checks them (Config.Validate).
type Policy struct {
	// HeartbeatGrace is how long past its ttl a heartbeat may be late before
	// its owner counts as dead.
	HeartbeatGrace time.Duration
	// HeartbeatRecheck is how long after the read that finds a row dead a
	// second one must come to settle its death (heartbeat.Settle); 0, the
	// default, is each row's heartbeat period (ttl/3) and a margin.
	HeartbeatRecheck time.Duration
	// FinishedGrace is how long after a task finished its locks are left for
	// the worker to release them itself.
	FinishedGrace time.Duration
	// ConfirmAfter is how long a suspect must persist before it is released.
	ConfirmAfter time.Duration
	// LostRunning is the state a lost running task is moved to: canceled
	// or failed (pulpcore's own choice).
	LostRunning string
	// OrphanedWaiting is what happens to a waiting task claimed by a dead
	// worker: requeue (app_lock_id = NULL) or cancel.
	OrphanedWaiting string
	// MaxDeadFraction and MinWorkers form the mass-death guard: when more than
	// this fraction of at least MinWorkers worker rows is dead, nothing is
	// released on dead grounds and no task is updated.
	MaxDeadFraction float64
	MinWorkers      int
	// Force overrides the mass-death guard.
	Force bool
	// MaxReleases and MaxTaskUpdates bound one pass; the rest waits for the
	// next one.
	MaxReleases    int
	MaxTaskUpdates int
	// Kubernetes are the settings of the pod evidence rules (kubernetes.hung_worker_grace).
	Kubernetes heartbeat.PodPolicy
}
