package sim

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// FaultKind is one way the simulated fleet misbehaves. The first seven are
// the leak paths of the protocol description, in its order.
type FaultKind int

const (
	// FaultLeakBeforeClaim is path 1: acquire, then fail before the claim
	// without releasing. Leaves: a waiting, unclaimed task whose locks are
	// held by a live worker.
	FaultLeakBeforeClaim FaultKind = iota + 1
	// FaultFinalNoRelease is path 2: the task subprocess dies after writing
	// completed. Leaves: a completed task whose locks a live worker holds.
	FaultFinalNoRelease
	// FaultCancelPathError is path 3: the cancel path raises. Leaves: a
	// canceled task whose locks a live worker holds.
	FaultCancelPathError
	// FaultSupervisorError is path 4: the supervisor raises. Leaves: a failed
	// task whose locks a live worker holds.
	FaultSupervisorError
	// FaultCancelRace is path 5: a cancel of the waiting task races the
	// worker's acquire and claim. Leaves: a canceled task (app_lock = the API)
	// whose locks a live worker holds.
	FaultCancelRace
	// FaultImmediateRelease is path 6: an immediate task's release fails.
	// Leaves: a completed immediate task whose locks a live API process holds.
	FaultImmediateRelease
	// FaultKill is path 7: kill -9. Leaves: a worker row whose heartbeats
	// stopped and every lock and claim it had (running task, claimed waiting
	// task, or locks of an unclaimed task, by the step it died at).
	FaultKill
	// FaultRestart: a killed worker starts again under the same name, with a
	// new AppStatus row.
	FaultRestart
	// FaultHeartbeatDelay: a heartbeat comes late, but within ttl + grace.
	FaultHeartbeatDelay
	// FaultSlowDB: a database statement is delayed.
	FaultSlowDB
	// FaultHangBeforeStart: a claimed task's process waits FaultRates.HangFor
	// before set_running while its worker beats and holds the task's locks.
	// Leaves, for that long: a claimed-not-started task.
	FaultHangBeforeStart
	// FaultStranded (not random: Config.WorkerVersions and SetTaskVersions
	// make it): a worker claimed a task it is too old for, released its
	// locks and kept the claim. Leaves: a stranded task.
	FaultStranded
	// FaultShutdown (not random: a failed heartbeat write or Redis PING, or
	// Terminate): a worker shut itself down; Detail says why and whether
	// it deleted its row.
	FaultShutdown
	// FaultCancelClaimed (not random: Cancel of a waiting task a worker
	// claimed): the task is canceling, and only its worker would finish the
	// cancel. With a stranded claim, leaves: a stuck-canceling task.
	FaultCancelClaimed
)

// randomFaultKinds are the kinds FaultRates can inject at random.
var randomFaultKinds = []FaultKind{
	FaultLeakBeforeClaim, FaultFinalNoRelease, FaultCancelPathError, FaultSupervisorError,
	FaultCancelRace, FaultImmediateRelease, FaultKill, FaultHeartbeatDelay, FaultSlowDB,
	FaultHangBeforeStart,
}

func (k FaultKind) String() string {
	switch k {
	case FaultLeakBeforeClaim:
		return "leak-before-claim"
	case FaultFinalNoRelease:
		return "final-no-release"
	case FaultCancelPathError:
		return "cancel-path-error"
	case FaultSupervisorError:
		return "supervisor-error"
	case FaultCancelRace:
		return "cancel-race"
	case FaultImmediateRelease:
		return "immediate-release"
	case FaultKill:
		return "kill"
	case FaultRestart:
		return "restart"
	case FaultHeartbeatDelay:
		return "heartbeat-delay"
	case FaultSlowDB:
		return "slow-db"
	case FaultHangBeforeStart:
		return "hang-before-start"
	case FaultStranded:
		return "stranded"
	case FaultShutdown:
		return "shutdown"
	case FaultCancelClaimed:
		return "cancel-claimed"
	}
	return fmt.Sprintf("fault(%d)", int(k))
}

// FaultEvent is one fault that happened.
type FaultEvent struct {
	Kind FaultKind
	// Process is the owner name of the worker or API process it hit.
	Process string
	// Task is the task whose locks leaked, if any.
	Task string
	At   time.Time
	// Detail says more, e.g. at which step a worker was killed.
	Detail string
}

// Inject arms one fault of kind: the next process that reaches a step where
// that fault can happen performs it, whatever the random rates say. Use
// WaitFaults to learn which task it hit. FaultRestart cannot be armed (use
// Restart) and is ignored, like any unknown kind.
func (f *Fleet) Inject(kind FaultKind) {
	if !slices.Contains(randomFaultKinds, kind) {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.armed[kind]++
}

// SetFaultRates replaces the random fault rates, e.g. with the zero value to
// stop injecting faults before checking convergence. Armed faults stay armed.
func (f *Fleet) SetFaultRates(r FaultRates) error {
	r = r.withDefaults()
	if err := r.validate(); err != nil {
		return err
	}
	f.faultRates.Store(&r)
	return nil
}

// Faults returns every fault that happened so far, in order.
func (f *Fleet) Faults() []FaultEvent {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]FaultEvent(nil), f.faults...)
}

// WaitFaults waits until at least n faults of kind have happened and returns
// all of that kind.
func (f *Fleet) WaitFaults(ctx context.Context, kind FaultKind, n int) ([]FaultEvent, error) {
	for {
		f.mu.Lock()
		var evs []FaultEvent
		for _, e := range f.faults {
			if e.Kind == kind {
				evs = append(evs, e)
			}
		}
		signal := f.faultSignal
		f.mu.Unlock()
		if len(evs) >= n {
			return evs, nil
		}
		select {
		case <-ctx.Done():
			return evs, fmt.Errorf("wait for %d %s faults (have %d): %w", n, kind, len(evs), ctx.Err())
		case <-signal:
		}
	}
}

// fire decides whether a fault of kind happens at this opportunity: an armed
// fault always does, otherwise the random rate decides.
func (f *Fleet) fire(kind FaultKind) bool {
	f.mu.Lock()
	if f.armed[kind] > 0 {
		f.armed[kind]--
		f.mu.Unlock()
		return true
	}
	f.mu.Unlock()
	p := f.faultRates.Load().rate(kind)
	return p > 0 && f.rng.Float64() < p
}

func (f *Fleet) recordFault(kind FaultKind, process, task, detail string) {
	ev := FaultEvent{Kind: kind, Process: process, Task: task, At: time.Now(), Detail: detail}
	f.mu.Lock()
	f.faults = append(f.faults, ev)
	f.faultCounts[kind]++
	close(f.faultSignal)
	f.faultSignal = make(chan struct{})
	f.mu.Unlock()
	f.log.Info("fault injected", "kind", kind.String(), "process", process, "task", task, "detail", detail)
}
