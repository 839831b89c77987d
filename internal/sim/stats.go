package sim

import "sync/atomic"

// Stats counts what the fleet did. Tasks counts are the fleet's own doing;
// what a reaper did to tasks is not counted here.
type Stats struct {
	TasksCreated   int64
	TasksCompleted int64
	// TasksCanceled counts cancels completed by the fleet (API or worker).
	TasksCanceled int64
	// TasksFailed counts tasks the fleet set failed (supervisor-error faults).
	TasksFailed int64
	// StoppedOnSignal counts running tasks a worker aborted on finding
	// pulpcore's cancel signal (pulp:task:cancel:<task-uuid>), whoever set it.
	StoppedOnSignal int64
	// ImmediateRun counts immediate tasks an API process ran itself;
	// ImmediateDeferred those it left to the workers because of a lock.
	ImmediateRun      int64
	ImmediateDeferred int64
	// Acquired and AcquireBlocked count acquire script calls by outcome.
	Acquired       int64
	AcquireBlocked int64
	// ClaimsLost counts claims that found the task no longer waiting and
	// unclaimed (the worker then releases, unless a fault says otherwise).
	ClaimsLost int64
	Released   int64
	Heartbeats int64
	// Checks counts ownership checks; Excused counts vanished holdings that
	// were not violations (late heartbeat, the fleet's own release, another
	// process took the task over).
	Checks     int64
	Excused    int64
	Violations int64
	// Errors counts unexpected errors of simulated processes (see the log).
	Errors int64
	// ExpectedErrors counts the errors met while Fleet.ExpectErrors was on.
	ExpectedErrors int64
	// StrandedClaims counts tasks a worker claimed and left claimed because
	// it is too old for them (FaultStranded).
	StrandedClaims int64
	// Shutdowns counts workers that shut down: on SIGTERM (Terminate), on a
	// failed heartbeat write or Redis PING (FaultShutdown).
	Shutdowns int64
	// Aborted counts running tasks a shutting-down worker aborted.
	Aborted int64
	// Faults counts faults by kind.
	Faults map[FaultKind]int64
}

type counters struct {
	created, completed, canceled, failed  atomic.Int64
	stoppedOnSignal                       atomic.Int64
	immediateRun, immediateDeferred       atomic.Int64
	acquired, acquireBlocked, claimsLost  atomic.Int64
	released, heartbeats, checks, excused atomic.Int64
	errors, expectedErrors                atomic.Int64
	strandedClaims, shutdowns, aborted    atomic.Int64
}

// Stats returns a snapshot of the fleet's counters.
func (f *Fleet) Stats() Stats {
	c := &f.counters
	s := Stats{
		TasksCreated:      c.created.Load(),
		TasksCompleted:    c.completed.Load(),
		TasksCanceled:     c.canceled.Load(),
		TasksFailed:       c.failed.Load(),
		StoppedOnSignal:   c.stoppedOnSignal.Load(),
		ImmediateRun:      c.immediateRun.Load(),
		ImmediateDeferred: c.immediateDeferred.Load(),
		Acquired:          c.acquired.Load(),
		AcquireBlocked:    c.acquireBlocked.Load(),
		ClaimsLost:        c.claimsLost.Load(),
		Released:          c.released.Load(),
		Heartbeats:        c.heartbeats.Load(),
		Checks:            c.checks.Load(),
		Excused:           c.excused.Load(),
		Errors:            c.errors.Load(),
		ExpectedErrors:    c.expectedErrors.Load(),
		StrandedClaims:    c.strandedClaims.Load(),
		Shutdowns:         c.shutdowns.Load(),
		Aborted:           c.aborted.Load(),
		Faults:            map[FaultKind]int64{},
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	s.Violations = int64(len(f.violations))
	for k, n := range f.faultCounts {
		s.Faults[k] = n
	}
	return s
}
