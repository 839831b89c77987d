package sim

import (
	"context"
	"fmt"
	"time"

	"github.com/lock-reaper/lock-reaper/internal/ctxwait"
)

// workerLoop is a pulpcore worker: fetch a task, run it, repeat; sleep when
// nothing can be fetched. It holds one task at a time.
func (inc *incarnation) workerLoop() {
	ctx, f := inc.ctx, inc.p.f
	for {
		if inc.shutdown.Load() != shutdownNone {
			inc.exit()
			return
		}
		j, err := inc.fetch(ctx)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			f.noteError(ctx, inc.p.name, "fetch", err)
		}
		if j == nil {
			if !ctxwait.Sleep(ctx, f.cfg.PollInterval) {
				return
			}
			continue
		}
		inc.runTask(ctx, j)
		inc.untrack(j)
	}
}

// candidate is a waiting task as fetch sees it.
type candidate struct {
	id       string
	record   []string
	versions Versions
}

// fetch is pulpcore's fetch: the oldest waiting unclaimed tasks in order,
// acquire the first whose locks are free, then claim it. A task never jumps
// an older task that is blocked on a resource it conflicts with (exclusive
// against anything, shared against exclusive), so domain-wide tasks are not
// starved by a stream of small ones.
func (inc *incarnation) fetch(ctx context.Context) (*job, error) {
	f, name := inc.p.f, inc.p.name
	cands, err := inc.waitingTasks(ctx)
	if err != nil {
		return nil, err
	}
	wantedExclusive := map[string]bool{} // by blocked older tasks
	wantedShared := map[string]bool{}
	for _, c := range cands {
		if inc.ignored[c.id] {
			continue // fetch_task's exclude(pk__in=ignored_task_ids)
		}
		j := newJob(c.id, name, c.record)
		if conflictsWithOlder(j, wantedExclusive, wantedShared) {
			continue
		}
		j.acquiredAt = time.Now()
		blocked, err := Acquire(ctx, f.rdb, j.id, name, j.exclusive, j.shared)
		if err != nil {
			return nil, err
		}
		if len(blocked) > 0 {
			f.counters.acquireBlocked.Add(1)
			if blocked[0] != TaskLockBlocked {
				for _, r := range j.exclusive {
					wantedExclusive[r] = true
				}
				for _, r := range j.shared {
					wantedShared[r] = true
				}
			}
			continue
		}
		f.counters.acquired.Add(1)
		inc.track(j)
		if claimed := inc.claim(ctx, j); claimed {
			if !Compatible(inc.p.versions, c.versions) {
				inc.strand(ctx, j, c.versions)
				return nil, nil // handle_tasks breaks out and sleeps
			}
			return j, nil
		}
		inc.untrack(j)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
	return nil, nil
}

func conflictsWithOlder(j *job, wantedExclusive, wantedShared map[string]bool) bool {
	for _, r := range j.exclusive {
		if wantedExclusive[r] || wantedShared[r] {
			return true
		}
	}
	for _, r := range j.shared {
		if wantedExclusive[r] {
			return true
		}
	}
	return false
}

func (inc *incarnation) waitingTasks(ctx context.Context) ([]candidate, error) {
	f := inc.p.f
	if err := f.beforeStatement(ctx, inc.p.name); err != nil {
		return nil, err
	}
	rows, err := f.pool.Query(ctx, sqlWaitingTasks, f.cfg.FetchLimit)
	if err != nil {
		return nil, fmt.Errorf("select waiting tasks: %w", err)
	}
	defer rows.Close()
	var out []candidate
	for rows.Next() {
		var c candidate
		var flat []string
		if err := rows.Scan(&c.id, &c.record, &flat); err != nil {
			return nil, fmt.Errorf("scan waiting task: %w", err)
		}
		c.versions = versionsOf(flat)
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("select waiting tasks: %w", err)
	}
	return out, nil
}

// claim takes a task whose locks the worker just acquired, or gives them back.
// This is where leak paths 1 and 5 and an early kill strike.
func (inc *incarnation) claim(ctx context.Context, j *job) bool {
	f, name := inc.p.f, inc.p.name
	if f.fire(FaultKill) {
		j.killAt = [...]string{"after acquire", "after claim", "while running"}[f.rng.IntN(3)]
	}
	if j.killAt == "after acquire" {
		inc.die(j.id, j.killAt)
		return false
	}
	if f.fire(FaultLeakBeforeClaim) {
		f.recordFault(FaultLeakBeforeClaim, name, j.id, "failed between acquire and claim")
		return false
	}
	raced := false
	if api := f.api(); api != nil && f.fire(FaultCancelRace) {
		// The API cancels the task between our acquire and our claim and,
		// like pulpcore before the fix, releases nothing. The cancel is the
		// API process's request: this worker's death must not cut it off
		// between canceling and canceled.
		actx, stop := mergeCtx(context.WithoutCancel(ctx), api.ctx)
		err := api.cancelWaiting(actx, j.id, false)
		stop()
		if err != nil {
			f.noteError(ctx, api.p.name, "cancel in race", err)
		}
		raced = true
	}
	if _, err := inc.check(ctx, f.pool, j, "claim", false); err != nil {
		f.noteError(ctx, name, "check before claim", err)
	}
	n, err := f.exec(ctx, f.pool, name, sqlClaim, j.id, inc.rowID)
	if err != nil && ctx.Err() != nil {
		return false
	}
	if err == nil && n == 1 {
		return true
	}
	f.counters.claimsLost.Add(1)
	if raced {
		f.recordFault(FaultCancelRace, name, j.id, "claim lost to a cancel; nobody released")
		return false
	}
	if err != nil {
		f.noteError(ctx, name, "claim", err)
	}
	// The fixed path 1: whatever went wrong, give the locks back.
	inc.release(ctx, j)
	return false
}

// runTask runs a claimed task to its end: set_running, execute, then
// completed (or canceled, or failed), then release. Leak paths 2, 3 and 4 and
// the later kills strike here.
func (inc *incarnation) runTask(ctx context.Context, j *job) {
	f, name := inc.p.f, inc.p.name
	if j.killAt == "after claim" {
		inc.die(j.id, j.killAt)
		return
	}
	if f.fire(FaultHangBeforeStart) {
		if !inc.hangBeforeStart(ctx, j) {
			return
		}
	}
	if _, err := inc.check(ctx, f.pool, j, "set-running", false); err != nil {
		f.noteError(ctx, name, "check before set-running", err)
	}
	n, err := f.exec(ctx, f.pool, name, sqlSetRunning, j.id, inc.rowID, NewUUID())
	if ctx.Err() != nil {
		return
	}
	if err != nil || n != 1 {
		if err != nil {
			f.noteError(ctx, name, "set running", err)
		} else if inc.canceledBeforeStart(ctx, j) {
			return
		} else {
			inc.rowChanged(ctx, f.pool, j, "set-running")
		}
		inc.release(ctx, j)
		return
	}

	switch inc.execute(ctx, j, inc.taskDuration(), true) {
	case outcomeKilled:
		return
	case outcomeAborted:
		inc.abortTask(ctx, j)
		return
	case outcomeCanceled:
		f.counters.stoppedOnSignal.Add(1)
		inc.cancelRunning(ctx, j)
		return
	}

	if f.fire(FaultSupervisorError) {
		if ok, err := f.finish(ctx, f.pool, name, j.id, inc.rowID, StateFailed,
			strPtr("Supervisor error (simulated)."), StateRunning); err == nil && ok {
			f.counters.failed.Add(1)
		}
		f.recordFault(FaultSupervisorError, name, j.id, "task failed, locks kept")
		return
	}
	if _, err := inc.check(ctx, f.pool, j, "set-completed", false); err != nil {
		f.noteError(ctx, name, "check before set-completed", err)
	}
	ok, err := f.finish(ctx, f.pool, name, j.id, inc.rowID, StateCompleted, nil, StateRunning)
	if ctx.Err() != nil {
		return
	}
	switch {
	case err != nil:
		f.noteError(ctx, name, "set completed", err)
	case !ok:
		inc.rowChanged(ctx, f.pool, j, "set-completed")
	default:
		f.counters.completed.Add(1)
		if f.fire(FaultFinalNoRelease) {
			f.recordFault(FaultFinalNoRelease, name, j.id, "task completed, locks kept")
			return
		}
	}
	if _, err := inc.check(ctx, f.pool, j, "release", false); err != nil {
		f.noteError(ctx, name, "check before release", err)
	}
	inc.release(ctx, j)
}

func (inc *incarnation) taskDuration() time.Duration {
	c := inc.p.f.cfg
	return inc.p.f.rng.Duration(c.MinTaskDuration, c.MaxTaskDuration)
}

type outcome int

const (
	outcomeDone outcome = iota
	outcomeCanceled
	outcomeKilled
	// outcomeAborted: the worker is shutting down at once (shutdown.go).
	outcomeAborted
)

// execute stands for the task's work: it waits for d, checking every poll
// interval for its locks and (with cancelable) for a cancel request. A kill
// fault scheduled "while running" strikes at a random moment of it.
func (inc *incarnation) execute(ctx context.Context, j *job, d time.Duration, cancelable bool) outcome {
	f := inc.p.f
	start := time.Now()
	deadline := start.Add(d)
	var killAt time.Time
	if j.killAt == "while running" {
		killAt = start.Add(f.rng.Duration(0, d))
	}
	for {
		wait := min(f.cfg.PollInterval, time.Until(deadline))
		if !killAt.IsZero() {
			wait = min(wait, time.Until(killAt))
		}
		if !ctxwait.Sleep(ctx, wait) {
			return outcomeKilled
		}
		if !killAt.IsZero() && !time.Now().Before(killAt) {
			inc.die(j.id, j.killAt)
			return outcomeKilled
		}
		if inc.aborting() {
			return outcomeAborted
		}
		canceled, err := inc.check(ctx, f.pool, j, "execute", cancelable)
		if ctx.Err() != nil {
			return outcomeKilled
		}
		if err != nil {
			f.noteError(ctx, inc.p.name, "check while executing", err)
		}
		if canceled {
			return outcomeCanceled
		}
		if !time.Now().Before(deadline) {
			return outcomeDone
		}
	}
}

// cancelRunning is the worker's side of canceling a running task: clear the
// request, release, set canceling, set canceled (pulpcore releases first).
// Leak path 3 strikes here.
func (inc *incarnation) cancelRunning(ctx context.Context, j *job) {
	f, name := inc.p.f, inc.p.name
	if err := f.rdb.Del(ctx, CancelKey(j.id)).Err(); err != nil {
		f.noteError(ctx, name, "clear cancel request", err)
	}
	reason := strPtr("Canceled on request (simulated).")
	if f.fire(FaultCancelPathError) {
		// The task process handled the cancel and ended the task, but the
		// supervisor's cleanup raised before releasing anything.
		if ok, err := f.finish(ctx, f.pool, name, j.id, inc.rowID, StateCanceled, reason, StateRunning); err == nil && ok {
			f.counters.canceled.Add(1)
		}
		f.recordFault(FaultCancelPathError, name, j.id, "task canceled, locks kept")
		return
	}
	if _, err := inc.check(ctx, f.pool, j, "cancel", false); err != nil {
		f.noteError(ctx, name, "check before cancel", err)
	}
	inc.release(ctx, j)
	if _, err := f.exec(ctx, f.pool, name, sqlSetCanceling, j.id, inc.rowID); err != nil {
		f.noteError(ctx, name, "set canceling", err)
		return
	}
	ok, err := f.finish(ctx, f.pool, name, j.id, inc.rowID, StateCanceled, reason, StateCanceling)
	switch {
	case err != nil:
		f.noteError(ctx, name, "set canceled", err)
	case ok:
		f.counters.canceled.Add(1)
	}
}

// release gives back a job's locks under its owner.
func (inc *incarnation) release(ctx context.Context, j *job) {
	f := inc.p.f
	if _, err := Release(ctx, f.rdb, j.id, j.owner, j.exclusive, j.shared); err != nil {
		f.noteError(ctx, j.owner, "release", err)
		return
	}
	f.counters.released.Add(1)
}

// strand is handle_tasks' answer to a task the worker is too old for: it
// remembers the task (ignored_task_ids), releases its locks
// (_maybe_release_locks(mark_released=False)) and keeps the claim, so no
// other worker fetches it: the task is stranded until a reaper requeues it.
func (inc *incarnation) strand(ctx context.Context, j *job, need Versions) {
	f := inc.p.f
	inc.ignored[j.id] = true
	inc.release(ctx, j)
	inc.untrack(j)
	f.counters.strandedClaims.Add(1)
	f.recordFault(FaultStranded, inc.p.name, j.id, fmt.Sprintf("needs %v, runs %v", need, inc.p.versions))
}

// hangBeforeStart is a task subprocess that waits before set_running (a
// connection from PgBouncer's queue, a row lock) for the fault's length,
// while the worker beats and holds the task's locks: claimed-not-started. An
// abort ends the wait as it ends a running task. It reports whether the
// worker goes on to set_running.
func (inc *incarnation) hangBeforeStart(ctx context.Context, j *job) bool {
	f := inc.p.f
	d := f.faultRates.Load().HangFor
	f.recordFault(FaultHangBeforeStart, inc.p.name, j.id, "hangs "+d.String()+" before set_running")
	until := time.Now().Add(d)
	for time.Now().Before(until) {
		if !ctxwait.Sleep(ctx, min(f.cfg.PollInterval, time.Until(until))) {
			return false
		}
		if inc.aborting() {
			inc.abortTask(ctx, j)
			return false
		}
	}
	return true
}

// canceledBeforeStart handles a set_running that found the task canceling:
// an API canceled it after the claim (cancel_task's set_canceling, then the
// signal). The task process ends and the supervisor finishes the cancel:
// release, then canceled. It reports whether that was the case.
func (inc *incarnation) canceledBeforeStart(ctx context.Context, j *job) bool {
	f, name := inc.p.f, inc.p.name
	state, appLock, _, _, err := f.taskRow(ctx, f.pool, name, j.id)
	if err != nil || state != StateCanceling || appLock != inc.rowID {
		return false
	}
	_ = f.rdb.Del(ctx, CancelKey(j.id)).Err()
	inc.release(ctx, j)
	ok, err := f.finish(ctx, f.pool, name, j.id, inc.rowID, StateCanceled, strPtr("Canceled on request (simulated)."), StateCanceling)
	switch {
	case err != nil:
		f.noteError(ctx, name, "set canceled", err)
	case ok:
		f.counters.canceled.Add(1)
	}
	return true
}
