package reaper

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"

	"github.com/lock-reaper/lock-reaper/heartbeat"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
	"github.com/lock-reaper/lock-reaper/reaper/pulpdb"
	"github.com/lock-reaper/lock-reaper/reaper/redislocks"
)

// actor carries out a plan: releases first, then task updates, then the
// suspects to remember. Each batch runs to its end even when the pass is
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
}

func (a *actor) run(ctx context.Context) error {
	a.initResults()
	if a.dryRun {
		return nil
	}
	releaseErr := inStep("releasing locks in", SystemRedis, a.release(ctx))
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
	suspectErr := inStep("remembering suspects in", SystemRedis,
		redislocks.WriteSuspects(context.WithoutCancel(ctx), a.r.rdb, a.r.cfg.RedisTimeout, a.r.cfg.SuspectTTL, a.suspectsToKeep()))
	var seenErr error
	if a.plan.SeenAlive != nil {
		seenErr = inStep("remembering the mass-death guard's memory in", SystemRedis,
			redislocks.WriteSeenAlive(context.WithoutCancel(ctx), a.r.rdb, a.r.cfg.RedisTimeout, a.r.cfg.SuspectTTL, a.plan.SeenAlive))
	}
	return errors.Join(releaseErr, updateErr, retireErr, suspectErr, seenErr)
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

// release applies the releases in batches of BatchSize, one Lua call each.
func (a *actor) release(ctx context.Context) error {
	var todo []int
	for i, res := range a.holdingResults {
		if res == "" {
			todo = append(todo, i)
		}
	}
	// A guarded holding costs the release script a count of its owner's
	// registry in each batch the owner comes up in: guarded holdings go
	// last, grouped by owner, so that an owner comes up in few batches.
	// The guarded shared memberships come last of all: each batch with one
	// reads the tasks reserving them from the database first, and there
	// are few (an owner's domains), so they fill few batches. The others
	// are grouped by owner too: the script removes each owner's registry
	// entries with one SREM per batch, so a batch of few owners makes few
	// calls.
	slices.SortStableFunc(todo, func(x, y int) int {
		gx, gy := a.plan.Holdings[x], a.plan.Holdings[y]
		if c := cmp.Compare(releaseGroup(gx), releaseGroup(gy)); c != 0 {
			return c
		}
		return strings.Compare(gx.Owner, gy.Owner)
	})
	rel := &redislocks.Releaser{RDB: a.r.rdb, Timeout: a.r.cfg.RedisTimeout, Log: a.r.log}
	end, err := rel.BatchEnds(ctx, a.plan.Holdings, todo, a.r.cfg.BatchSize)
	if err != nil {
		a.failHoldings(todo)
		return err
	}
	forget, err := rel.RememberSeen(ctx, redislocks.SeenRegistries(a.holdings, a.plan.Holdings), redislocks.GuardedOwners(a.plan.Holdings, todo))
	if err != nil {
		a.failHoldings(todo)
		return err
	}
	defer forget()
	logs := a.startReleaseLog()
	defer logs.wait()
	return inBatchesCutAt(ctx, todo, end, a.failHoldings, func(done int, idx []int) error {
		b := redislocks.Batch{Holdings: make([]judge.Holding, len(idx)), Guarded: make([]bool, len(idx))}
		retired := map[string]bool{}
		for n, i := range idx {
			jd := a.plan.Holdings[i]
			b.Holdings[n] = jd.Holding
			switch l := jd.Evidence().OwnerLiveness; {
			case (l == heartbeat.Dead || l == heartbeat.Gone) && !retired[jd.Owner]:
				retired[jd.Owner] = true
				b.Retire = append(b.Retire, jd.Owner)
			case judge.Guarded(jd):
				b.Guarded[n] = true
			}
		}
		if err := a.readReservers(ctx, &b); err != nil {
			return err
		}
		outcomes, err := rel.Release(context.WithoutCancel(ctx), b)
		if err != nil {
			return err
		}
		results := make([]Result, len(idx))
		for n, i := range idx {
			results[n] = releaseResults[outcomes[n]]
			a.holdingResults[i] = results[n]
		}
		logs.add(idx, results)
		a.progress(PhaseReleasing, done+len(idx), len(todo))
		return nil
	})
}

// releaseGroup orders the releases: holdings of owners that are neither
// alive nor late, then the guarded exclusive locks, then the guarded
// shared memberships.
func releaseGroup(jd judge.Judgement) int {
	switch {
	case !judge.Guarded(jd):
		return 0
	case jd.Kind != judge.KindShared:
		return 1
	}
	return 2
}

// readReservers gives the batch's guarded shared memberships the incomplete
// tasks that reserve their resources shared, read just before the release:
// the release script leaves a membership alone whose owner holds the task
// lock of one of them (a task it took since the snapshot, whose acquire
// found the owner in the set already and left no trace there). Without the
// owner registry (pulpcore before 3.117), or with one too large to count,
// nothing else tells of such a task. An exclusive lock needs no such read:
// pulpcore's acquire fails on a key that exists, so no new task takes it
// while it stands.
func (a *actor) readReservers(ctx context.Context, b *redislocks.Batch) error {
	var resources []string
	for n, h := range b.Holdings {
		if b.Guarded[n] && h.Kind == judge.KindShared {
			resources = append(resources, h.Resource())
		}
	}
	if len(resources) == 0 {
		return nil
	}
	reservers, err := pulpdb.ReadSharedReservers(context.WithoutCancel(ctx), a.r.pool, a.r.cfg.DatabaseTimeout, resources)
	if err != nil {
		return inStep("reading the tasks that reserve the shared resources to release in", SystemDatabase, err)
	}
	b.Reservers = make([][]string, len(b.Holdings))
	for n, h := range b.Holdings {
		if b.Guarded[n] && h.Kind == judge.KindShared {
			b.Reservers[n] = reservers[h.Resource()]
		}
	}
	return nil
}

// releaseResults are the results of the release script's outcomes.
var releaseResults = map[redislocks.Outcome]Result{
	redislocks.Released: ResultReleased, redislocks.AlreadyGone: ResultAlreadyGone, redislocks.OwnerChanged: ResultOwnerChanged,
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

// failHoldings marks the holdings of idx that have no result yet failed.
func (a *actor) failHoldings(idx []int) {
	for _, i := range idx {
		if a.holdingResults[i] == "" {
			a.holdingResults[i] = ResultFailed
		}
	}
}

func (a *actor) logHolding(jd judge.Judgement, res Result) {
	e := jd.Evidence()
	attrs := []slog.Attr{
		slog.String("key", jd.Key), slog.String("kind", jd.Kind.String()), slog.String("owner", jd.Owner),
		slog.String("verdict", jd.Verdict.String()), slog.String("result", string(res)),
		slog.String("owner_liveness", e.OwnerLiveness.String()),
	}
	if jd.TaskID() != "" {
		attrs = append(attrs, slog.String("task", jd.TaskID()))
	}
	if e.HeartbeatAge != nil {
		attrs = append(attrs, slog.Duration("heartbeat_age", timeDuration(e.HeartbeatAge)))
	}
	if e.TaskState != "" {
		attrs = append(attrs, slog.String("task_state", e.TaskState))
	}
	if e.FinishedAge != nil {
		attrs = append(attrs, slog.Duration("finished_age", timeDuration(e.FinishedAge)))
	}
	if e.Via != "" {
		attrs = append(attrs, slog.String("via", e.Via))
	}
	level := slog.LevelInfo
	if res == ResultOwnerChanged {
		level = slog.LevelWarn
	}
	a.r.log.LogAttrs(context.Background(), level, "released holding", attrs...)
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
		for n, i := range idx {
			batch[n] = a.plan.Tasks[i]
		}
		updated, err := up.UpdateBatch(context.WithoutCancel(ctx), batch)
		if err != nil {
			return inStep("updating Pulp's tasks in", SystemDatabase, err)
		}
		results := make([]Result, len(idx))
		for n, ok := range updated {
			results[n] = ResultSkipped
			if ok {
				results[n] = ResultUpdated
			}
		}
		var signal []string
		for n, i := range idx {
			a.taskResults[i] = results[n]
			a.logTask(a.plan.Tasks[i], results[n])
			if results[n] == ResultUpdated && judge.NeedsCancelSignal(&a.plan.Tasks[i]) {
				signal = append(signal, a.plan.Tasks[i].ID)
			}
		}
		// The batch's updates stand: a failed signal fails the tasks after it.
		if err := redislocks.PublishCancelSignals(context.WithoutCancel(ctx), a.r.rdb, a.r.cfg.RedisTimeout, a.r.log, signal); err != nil {
			return inStep("publishing cancel signals in", SystemRedis, err)
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
