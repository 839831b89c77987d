package reaper

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/lock-reaper/lock-reaper/reaper/judge"
	"github.com/lock-reaper/lock-reaper/reaper/pulpdb"
	"github.com/lock-reaper/lock-reaper/reaper/redislocks"
	"github.com/redis/go-redis/v9"
)

// actor carries out a plan: releases first, then task updates, then the
// suspects to remember (a Redis too full for the reaper's own records
// releases all the same: isOOM). Each batch runs to its end even when the pass is
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
	// core_task (openWrites, release.go).
	writes openWrites
	// bookkeepingFailed names the records of its own Redis refused for want
	// of memory, notes says so for the report (bookkeepingRefused).
	bookkeepingFailed []string
	notes             []string
	// crowded are the shared resources whose guarded memberships are
	// deferred without a check: the snapshot shows more tasks reserving
	// them than a release call checks (crowdedShared).
	crowded map[string]bool
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
	// them fails nothing else (isOOM).
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

// The reaper's own records in Redis (the registries a pass saw, the
// suspects, the mass-death guard's memory) are bookkeeping: none of them
// frees memory, and a Redis full under noeviction refuses their writes
// (OOM) while it still runs the release script, whose DEL and SREM free
// memory. So a record that Redis refuses for want of memory never stops or
// precedes the releases: the pass goes on without it, the report notes it
// and the count goes up (lock_reaper_bookkeeping_write_failures_total).
// What goes without it is only what a missing record always meant: a
// guarded release left alone (owner-changed), a suspect sighted again as
// new, the guard's memory of a worker shorter.

// Records the reaper keeps in Redis, as the report and the metric name
// them.
const (
	RecordRegistriesSeen = "registries-seen"
	RecordSuspects       = "suspects"
	RecordSeenAlive      = "seen-alive"
	RecordSignalsChecked = "signals-checked"
)

// BookkeepingRecords lists every record, for the metric's labels.
var BookkeepingRecords = []string{RecordRegistriesSeen, RecordSuspects, RecordSeenAlive, RecordSignalsChecked}

// isOOM says Redis refused a write because it is out of memory
// (maxmemory reached under noeviction).
func isOOM(err error) bool { return redis.HasErrorPrefix(err, "OOM") }

// bookkeepingRefused records that Redis, full, refused record: a note in
// the report and a warning; the pass goes on.
func (a *actor) bookkeepingRefused(record, without string, err error) {
	a.bookkeepingFailed = append(a.bookkeepingFailed, record)
	a.notes = append(a.notes, fmt.Sprintf("Redis is full (maxmemory reached, %s): the reaper's record %s was not written, and the pass went on without it (%s); free memory in Redis or raise maxmemory", err.Error(), record, without))
	a.r.log.Warn("Redis is full: a record of the reaper's own was not written; the pass goes on without it",
		slog.String("record", record), slog.String("error", err.Error()))
}

// BookkeepingWriteFailures names the records of its own the pass could not
// write because Redis was full (lock_reaper_bookkeeping_write_failures_total).
func (r *Report) BookkeepingWriteFailures() []string { return r.bookkeepingFailed }

// GuardRedisFailover names the guard a pass reports when Redis's primary
// changed between its first write and its end (a Sentinel failover): what
// the old primary took and had not passed on is lost.
const GuardRedisFailover = "redis-failover"

// signalCheckLimit bounds how many tasks one pass checks the cancel signal
// of; the check goes on at the next pass.
const signalCheckLimit = 10_000

// SignalCheck is what a pass did about the cancel signals of the tasks
// lock-reaper finished within the signal's lifetime, when Redis's primary
// was not the one they were last checked on (a failover or restart since,
// or a first pass): a failover loses the signals its old primary had not
// passed on, and a worker that reads none runs on a task the database says
// is over.
type SignalCheck struct {
	// Primary is the primary checked (redislocks.Primary.String).
	Primary string `json:"primary"`
	// Checked counts the tasks whose signal was looked for.
	Checked int `json:"checked"`
	// Republished counts the signals Redis did not hold, published again
	// for the rest of their lifetime. A worker deletes the signal it reads,
	// so a missing one was not necessarily lost.
	Republished int `json:"republished"`
	// More says more tasks may be left for the next pass (signalCheckLimit).
	More bool `json:"more"`
}

// checkCancelSignals runs once a writing pass has its snapshot, before its
// first write (no pass writes without a snapshot): it reads which primary
// Redis is and, when that is not the primary the cancel signals were last
// checked on, publishes again the missing signals of the tasks lock-reaper
// finished within the signal's lifetime, at most signalCheckLimit of them,
// newest first. It returns the primary, for notePrimaryChange, and false
// when Redis would not say which it is. An error is the check's alone: the
// pass does its work and then reports it, and the next pass checks again.
func (r *Reaper) checkCancelSignals(ctx context.Context, rep *Report) (redislocks.Primary, bool, error) {
	primary, rec, err := redislocks.ReadPrimary(ctx, r.rdb, r.cfg.RedisTimeout)
	if err != nil {
		note := "Which Redis primary this is could not be read (" + err.Error() + "): a failover under or between passes goes unnoticed, " +
			"and the cancel signals it lost are not published again. Allow +info to the reaper's Redis user (internal/privilege/redis.acl)"
		rep.Notes = append(rep.Notes, note)
		r.log.Warn("Redis primary unknown", slog.String("note", note))
		return redislocks.Primary{}, false, nil
	}
	id := primary.String()
	if rec.Primary == id {
		return primary, true, nil
	}
	after := ""
	if rec.Checking == id {
		after = rec.After
	}
	tasks, now, next, err := pulpdb.ReadFinishedByReaper(ctx, r.pool, r.cfg.DatabaseTimeout, after, r.signalCheckLimit)
	if err != nil {
		return primary, true, inStep("reading the tasks lock-reaper finished, to check their cancel signals, from", SystemDatabase, err)
	}
	signals := make([]redislocks.SignalAgain, 0, len(tasks))
	for _, t := range tasks {
		if left := judge.SignalLifetimeLeft(t.FinishedAt, now); left > 0 {
			signals = append(signals, redislocks.SignalAgain{ID: t.ID, TTL: left})
		}
	}
	check := &SignalCheck{Primary: id, Checked: len(signals), More: len(tasks) == r.signalCheckLimit}
	rep.SignalCheck = check
	for start := 0; start < len(signals); start += r.cfg.BatchSize {
		n, err := redislocks.RepublishMissingCancelSignals(context.WithoutCancel(ctx), r.rdb, r.cfg.RedisTimeout, r.log,
			signals[start:min(start+r.cfg.BatchSize, len(signals))])
		check.Republished += n
		if err != nil {
			return primary, true, inStep("publishing missing cancel signals again in", SystemRedis, err)
		}
	}
	done := redislocks.SignalsChecked{Primary: id}
	if check.More {
		done = redislocks.SignalsChecked{Primary: rec.Primary, Checking: id, After: next}
	}
	if err := redislocks.WriteSignalsChecked(context.WithoutCancel(ctx), r.rdb, r.cfg.RedisTimeout, done); isOOM(err) {
		// A full Redis refuses the record, not the releases: the next pass
		// checks again, which is harmless (isOOM).
		rep.bookkeepingFailed = append(rep.bookkeepingFailed, RecordSignalsChecked)
		rep.Notes = append(rep.Notes, fmt.Sprintf("Redis is full (maxmemory reached, %s): the reaper's record %s was not written, and the pass went on without it (the next pass checks the cancel signals again); free memory in Redis or raise maxmemory", err.Error(), RecordSignalsChecked))
		r.log.Warn("Redis is full: a record of the reaper's own was not written; the pass goes on without it",
			slog.String("record", RecordSignalsChecked), slog.String("error", err.Error()))
	} else if err != nil {
		return primary, true, inStep("recording the cancel signals' check in", SystemRedis, err)
	}
	if check.Republished > 0 || check.More {
		note := fmt.Sprintf("Redis's primary (%s) is not the one lock-reaper last checked its cancel signals on (a failover or a restart since, or a first pass): "+
			"of %d tasks it finished in the signal's last 24 hours, %d had no cancel signal, published again for the rest of its 24 hours "+
			"(lost with an old primary, or read and deleted by a worker: the tasks are final either way)", id, check.Checked, check.Republished)
		if check.More {
			note += fmt.Sprintf("; the next pass checks the tasks finished before these %d", len(tasks))
		}
		rep.Notes = append(rep.Notes, note)
		r.log.Warn("published missing cancel signals again", slog.String("primary", id), slog.Int("checked", check.Checked),
			slog.Int("republished", check.Republished), slog.Bool("more", check.More))
	}
	return primary, true, nil
}

// notePrimaryChange runs after a writing pass's last write to Redis: when
// the primary is no longer the one the pass began on, or will not say, the
// pass reports the guard GuardRedisFailover. Its writes to the old primary
// may be lost; the next pass finds the primary unchecked
// (checkCancelSignals) and the locks as the new primary holds them.
func (r *Reaper) notePrimaryChange(ctx context.Context, rep *Report, before redislocks.Primary) {
	after, err := redislocks.ReadPrimaryIdentity(context.WithoutCancel(ctx), r.rdb, r.cfg.RedisTimeout)
	const next = "; the next pass reads the locks again and publishes again the missing cancel signals of the tasks lock-reaper finished in the signal's last 24 hours"
	var reason string
	switch {
	case err != nil:
		reason = "Redis could not say which primary it is after the pass's writes (" + err.Error() + "), so a failover may have lost some of them" + next
	case after != before:
		reason = fmt.Sprintf("Redis's primary changed during the pass (before its writes %s; after them %s): what the old primary took and had not passed on is lost, "+
			"this pass's releases and cancel signals among it", before, after) + next
	default:
		return
	}
	rep.Guards = append(rep.Guards, Guard{Name: GuardRedisFailover, Reason: reason})
	r.log.Warn("guard held work back", slog.String("guard", GuardRedisFailover), slog.String("reason", reason))
}

// progress tells the pass's Phase callback, when set, how far acting got.
func (a *actor) progress(name string, done, total int) {
	if a.phase != nil {
		a.phase(name, done, total)
	}
}
