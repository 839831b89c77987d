package reaper

import (
	"context"
	"errors"
	"log/slog"

	"github.com/lock-reaper/lock-reaper/reaper/judge"
	"github.com/lock-reaper/lock-reaper/reaper/pulpdb"
	"github.com/lock-reaper/lock-reaper/reaper/redislocks"
)

// actor carries out a plan: releases first, then task updates, then the
// suspects to remember (a Redis too full for the reaper's own records
// releases all the same: bookkeeping.go). Each batch runs to its end even when the pass is
// being stopped, so nothing is left half-done; the next batch is not started.
type actor struct {
	r    *Reaper
	plan *judge.Plan
	// holdings are the snapshot's, which the plan judged: the release
	// script's new-task check compares an owner's registry with them.
	holdings []judge.Holding
	dryRun   bool
	phase    func(phase string, done, total int)
	// holdingResults and taskResults parallel plan.Holdings and plan.Tasks.
	holdingResults []Result
	taskResults    []Result
	taskDeferred   []string
	// declaredDead is the owner a forced release declared dead while its
	// heartbeat was current (declaredDead in reaper.go), or "".
	declaredDead string
	// writes is what the pass saw of other sessions' uncommitted writes to
	// core_task (open_write.go).
	writes openWrites
	// bookkeepingFailed names the records of its own Redis refused for want
	// of memory, notes says so for the report (bookkeeping.go).
	bookkeepingFailed []string
	notes             []string
}

func (a *actor) run(ctx context.Context) error {
	a.initResults()
	if a.dryRun {
		return a.foreseeHeld(ctx)
	}
	releaseErr := inStep("releasing locks in", SystemRedis, a.release(ctx))
	// Stored even when the release failed: the sightings are facts.
	writesErr := a.rememberOpenWrites(context.WithoutCancel(ctx))
	var updateErr, retireErr error
	if releaseErr == nil {
		updateErr = inStep("updating Pulp's tasks in", SystemDatabase, a.updateTasks(ctx))
		// Owners with nothing left and no live row leave the registry, as
		// pulpcore's cleanup would have them.
		if ctx.Err() == nil {
			retireErr = inStep("retiring owners from "+redislocks.ActiveOwnersKey+" in", SystemRedis,
				redislocks.RetireOwners(context.WithoutCancel(ctx), a.r.rdb, a.r.cfg.RedisTimeout, a.r.log, a.plan.FleetOwners))
		}
	} else {
		a.failPendingTasks()
	}
	// The reaper's own records come last, and a Redis too full to take
	// them fails nothing else (bookkeeping.go).
	suspectErr := redislocks.WriteSuspects(context.WithoutCancel(ctx), a.r.rdb, a.r.cfg.RedisTimeout, a.r.cfg.SuspectTTL, a.suspectsToKeep())
	if isOOM(suspectErr) {
		a.bookkeepingRefused(RecordSuspects, "a suspect of this pass is sighted again as new", suspectErr)
		suspectErr = nil
	}
	suspectErr = inStep("remembering suspects in", SystemRedis, suspectErr)
	var seenErr error
	if a.plan.SeenAlive != nil {
		seenErr = redislocks.WriteSeenAlive(context.WithoutCancel(ctx), a.r.rdb, a.r.cfg.RedisTimeout, a.r.cfg.SuspectTTL, a.plan.SeenAlive)
		if isOOM(seenErr) {
			a.bookkeepingRefused(RecordSeenAlive, "the mass-death guard remembers the workers of the last pass that wrote it", seenErr)
			seenErr = nil
		}
		seenErr = inStep("remembering the mass-death guard's memory in", SystemRedis, seenErr)
	}
	return errors.Join(releaseErr, writesErr, updateErr, retireErr, suspectErr, seenErr)
}

// initResults gives every holding and task the result it has unless the
// pass acts on it.
func (a *actor) initResults() {
	a.holdingResults = make([]Result, len(a.plan.Holdings))
	for i, jd := range a.plan.Holdings {
		switch {
		case jd.Action == judge.ActionKeep:
			a.holdingResults[i] = ResultKept
		case jd.Action == judge.ActionSuspect:
			a.holdingResults[i] = ResultSuspected
		case jd.Deferred != "":
			a.holdingResults[i] = ResultDeferred
		case a.dryRun:
			a.holdingResults[i] = ResultWouldRelease
		}
	}
	a.taskResults = make([]Result, len(a.plan.Tasks))
	a.taskDeferred = make([]string, len(a.plan.Tasks))
	for i, tj := range a.plan.Tasks {
		a.taskDeferred[i] = tj.Deferred
		switch {
		case tj.Action == judge.ActionReport:
			// Reported only (unprotected): nothing is written for it.
			a.taskResults[i] = ResultReported
		case tj.Action == judge.ActionSuspect:
			a.taskResults[i] = ResultSuspected
		case tj.Deferred != "":
			a.taskResults[i] = ResultDeferred
		case a.dryRun:
			a.taskResults[i] = ResultWouldUpdate
		}
	}
}

// inBatches calls do with consecutive batches of at most size of todo, and
// how many came before. A batch is never cut short: ctx is looked at only
// between batches. When ctx is done or do fails, what is left of todo, the
// failed batch included, goes to rest, and the error is returned.
func inBatches(ctx context.Context, todo []int, size int, rest func([]int), do func(done int, idx []int) error) error {
	return inBatchesCutAt(ctx, todo, func(start int) int { return min(start+size, len(todo)) }, rest, do)
}

// inBatchesCutAt is inBatches with todo cut into batches where cutAt says:
// the batch starting at start ends before cutAt(start), which is past start.
func inBatchesCutAt(ctx context.Context, todo []int, cutAt func(start int) int, rest func([]int), do func(done int, idx []int) error) error {
	for start, stop := 0, 0; start < len(todo); start = stop {
		stop = cutAt(start)
		err := ctx.Err()
		if err == nil {
			err = do(start, todo[start:stop])
		}
		if err != nil {
			rest(todo[start:])
			return err
		}
	}
	return nil
}

// updateTasks applies the task updates. A requeue or cancel of a waiting task
// waits until its task lock is gone: a task requeued while its old lock
// remains would block the next worker that picks it up.
func (a *actor) updateTasks(ctx context.Context) error {
	gone, held := map[string]bool{}, map[string]bool{}
	for i, jd := range a.plan.Holdings {
		if jd.Kind != judge.KindTask {
			continue
		}
		if r := a.holdingResults[i]; r == ResultReleased || r == ResultAlreadyGone {
			gone[jd.Key] = true
		} else {
			held[jd.Key] = true
		}
	}
	for k := range gone {
		delete(held, k)
	}
	var todo []int
	for i := range a.plan.Tasks {
		if a.taskResults[i] != "" {
			continue
		}
		if judge.UpdateWaits(&a.plan.Tasks[i], held) {
			a.taskResults[i], a.taskDeferred[i] = ResultDeferred, judge.DeferredTaskLockHeld
			continue
		}
		todo = append(todo, i)
	}
	up := &pulpdb.TaskUpdater{Pool: a.r.pool, Timeout: a.r.cfg.DatabaseTimeout, Log: a.r.log}
	return inBatches(ctx, todo, a.r.cfg.BatchSize, a.failTasks, func(done int, idx []int) error {
		batch := make([]judge.TaskJudgement, len(idx))
		var signal []string
		for n, i := range idx {
			batch[n] = a.plan.Tasks[i]
			if judge.NeedsCancelSignal(&batch[n]) {
				signal = append(signal, batch[n].ID)
			}
		}
		// The cancel signals go first: a process that stops between the
		// two steps (a kill, a lost connection) leaves either signals for
		// tasks still running, which the next pass cancels and signals
		// again, or nothing. Sent after the commit, they were lost for
		// good with such a stop: the next pass sees the tasks finished. A
		// signal for a task whose update then loses its race (the task
		// ended meanwhile) is read by no worker and expires.
		if err := redislocks.PublishCancelSignals(context.WithoutCancel(ctx), a.r.rdb, a.r.cfg.RedisTimeout, a.r.log, signal); err != nil {
			return inStep("publishing cancel signals in", SystemRedis, err)
		}
		updated, err := up.UpdateBatch(context.WithoutCancel(ctx), batch)
		if err != nil {
			return inStep("updating Pulp's tasks in", SystemDatabase, err)
		}
		for n, i := range idx {
			res := ResultSkipped
			if updated[n] {
				res = ResultUpdated
			}
			a.taskResults[i] = res
			a.logTask(a.plan.Tasks[i], res)
		}
		a.progress(PhaseUpdatingTasks, done+len(idx), len(todo))
		return nil
	})
}

func (a *actor) failPendingTasks() {
	for i, res := range a.taskResults {
		if res == "" {
			a.taskResults[i] = ResultFailed
		}
	}
}

// failTasks marks the tasks of idx that have no result yet failed.
func (a *actor) failTasks(idx []int) {
	for _, i := range idx {
		if a.taskResults[i] == "" {
			a.taskResults[i] = ResultFailed
		}
	}
}

func (a *actor) logTask(tj judge.TaskJudgement, res Result) {
	a.r.log.LogAttrs(context.Background(), slog.LevelInfo, "updated task",
		slog.String("task", tj.ID), slog.String("verdict", tj.Verdict.String()), slog.String("result", string(res)),
		slog.String("state_before", tj.StateBefore), slog.String("state_after", tj.StateAfter),
		slog.Bool("requeue", tj.ClearClaim), slog.String("owner", tj.Owner), slog.String("app_lock_id", tj.AppLockID))
}

// suspectsToKeep is the plan's suspects less those this pass settled: a
// holding released or gone, a stuck claim requeued.
func (a *actor) suspectsToKeep() map[judge.SuspectKey]judge.Suspect {
	keep := make(map[judge.SuspectKey]judge.Suspect, len(a.plan.Suspects))
	for k, s := range a.plan.Suspects {
		keep[k] = s
	}
	for i, jd := range a.plan.Holdings {
		switch a.holdingResults[i] {
		case ResultReleased, ResultAlreadyGone, ResultOwnerChanged:
			delete(keep, judge.SuspectKey{Key: jd.Key, Owner: jd.Owner})
		}
	}
	for i, tj := range a.plan.Tasks {
		switch a.taskResults[i] {
		case ResultUpdated, ResultSkipped:
			delete(keep, judge.StuckClaimKey(tj.ID, tj.AppLockID))
		}
	}
	return keep
}
