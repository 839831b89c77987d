package sim

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
)

// ErrNoAPI is returned when every API process of the fleet is dead.
var ErrNoAPI = errors.New("sim: no live API process")

// Cancel cancels a task the way pulpcore's API does. A waiting, unclaimed
// task is canceled on the spot (canceling with app_lock = the API process,
// then canceled) and its locks are released under whatever owner its task key
// names, since a worker may have acquired them without claiming yet. A
// claimed or running task gets a cancel request (pulp:task:cancel:<id>, one
// day) that its worker acts on. Canceling a task that is already final or
// canceling does nothing.
func (f *Fleet) Cancel(ctx context.Context, taskID string) error {
	api := f.api()
	if api == nil {
		return ErrNoAPI
	}
	ctx, cancel := mergeCtx(ctx, api.ctx)
	defer cancel()
	return api.cancelWaiting(ctx, taskID, true)
}

// cancelWaiting is the API's cancel; release false is leak path 5's API side.
func (inc *incarnation) cancelWaiting(ctx context.Context, taskID string, release bool) error {
	f, name := inc.p.f, inc.p.name
	n, err := f.exec(ctx, f.pool, name, sqlCancelWaiting, taskID, inc.rowID)
	if err != nil {
		return fmt.Errorf("cancel task %s: %w", taskID, err)
	}
	if n == 0 {
		state, appLock, _, found, err := f.taskRow(ctx, f.pool, name, taskID)
		switch {
		case err != nil:
			return err
		case !found:
			return fmt.Errorf("cancel task %s: no such task", taskID)
		case state == StateWaiting && appLock != "":
			// cancel_task's set_canceling: the worker that claimed it
			// finishes the cancel, if it ever runs it (stuck-canceling).
			n, err := f.exec(ctx, f.pool, name, sqlSetCancelingClaimed, taskID)
			if err != nil {
				return fmt.Errorf("cancel claimed task %s: %w", taskID, err)
			}
			if n > 0 {
				f.recordFault(FaultCancelClaimed, name, taskID, "claimed by "+appLock)
			}
			if err := f.rdb.Set(ctx, CancelKey(taskID), "cancel", cancelSignalTTLSeconds*time.Second).Err(); err != nil {
				return fmt.Errorf("request cancel of task %s: %w", taskID, err)
			}
		case state == StateWaiting || state == StateRunning:
			if err := f.rdb.Set(ctx, CancelKey(taskID), "cancel", cancelSignalTTLSeconds*time.Second).Err(); err != nil {
				return fmt.Errorf("request cancel of task %s: %w", taskID, err)
			}
		}
		return nil
	}
	ok, err := f.finish(ctx, f.pool, name, taskID, inc.rowID, StateCanceled, strPtr("Canceled on request (simulated)."), StateCanceling)
	if err != nil {
		return err
	}
	if ok {
		f.counters.canceled.Add(1)
	}
	if !release {
		return nil
	}
	owner, err := f.rdb.Get(ctx, TaskKey(taskID)).Result()
	if errors.Is(err, redis.Nil) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read owner of task %s: %w", taskID, err)
	}
	_, _, record, _, err := f.taskRow(ctx, f.pool, name, taskID)
	if err != nil {
		return err
	}
	ex, sh := SplitReserved(record)
	// Between the GET above and this release the owner may have released
	// this task and acquired another that shares a resource: the release
	// then takes that holding too. That race is pulpcore's; the note keeps
	// the owner from blaming a reaper for it.
	keys := lockLayout(taskID, ex, sh).keys
	done := f.noteSelfRelease(owner, keys)
	notOwned, err := Release(ctx, f.rdb, taskID, owner, ex, sh)
	done()
	if err != nil {
		return err
	}
	f.counters.released.Add(1)
	var released []string
	for _, k := range keys {
		if !slices.Contains(notOwned, k) {
			released = append(released, k)
		}
	}
	f.recordSelfRelease(name, owner, taskID, released)
	return nil
}

// RunImmediate dispatches an immediate task through a live API process, as
// pulpcore's dispatch does: the task row is created claimed by the API
// process, the locks are acquired under its name, the task executes in the
// API process and is released there. If a lock is taken, the task is left
// waiting and unclaimed for the workers and ran is false. With
// Config.ImmediateInTransaction the row stays uncommitted until the task is
// done. Leak path 6 strikes after completion.
func (f *Fleet) RunImmediate(ctx context.Context, spec TaskSpec) (taskID string, ran bool, err error) {
	api := f.api()
	if api == nil {
		return "", false, ErrNoAPI
	}
	ctx, cancel := mergeCtx(ctx, api.ctx)
	defer cancel()
	return api.runImmediate(ctx, spec.withDomain())
}

func (inc *incarnation) runImmediate(ctx context.Context, spec TaskSpec) (string, bool, error) {
	f, name := inc.p.f, inc.p.name
	inc.p.immediateMu.Lock()
	defer inc.p.immediateMu.Unlock()

	var q querier = f.pool
	if f.cfg.ImmediateInTransaction {
		tx, err := f.pool.Begin(ctx)
		if err != nil {
			return "", false, fmt.Errorf("begin request transaction: %w", err)
		}
		defer tx.Rollback(context.WithoutCancel(ctx)) // error dropped: a no-op after Commit
		q = tx
	}
	j := newJob(NewUUID(), name, spec.Record())
	if _, err := f.exec(ctx, q, name, sqlInsertImmediate, j.id, spec.Name, j.record, spec.DomainID, inc.rowID); err != nil {
		return "", false, fmt.Errorf("insert immediate task: %w", err)
	}
	f.counters.created.Add(1)
	j.acquiredAt = time.Now()
	blocked, err := Acquire(ctx, f.rdb, j.id, name, j.exclusive, j.shared)
	if err != nil {
		return j.id, false, err
	}
	if len(blocked) > 0 {
		f.counters.acquireBlocked.Add(1)
		if _, err := f.exec(ctx, q, name, sqlDeferImmediate, j.id, inc.rowID); err != nil {
			return j.id, false, fmt.Errorf("defer immediate task: %w", err)
		}
		f.counters.immediateDeferred.Add(1)
		return j.id, false, commit(ctx, q)
	}
	f.counters.acquired.Add(1)
	inc.track(j)
	defer inc.untrack(j)

	if _, err := inc.check(ctx, q, j, "set-running", false); err != nil {
		f.noteError(ctx, name, "check before set-running", err)
	}
	if n, err := f.exec(ctx, q, name, sqlSetRunning, j.id, inc.rowID, NewUUID()); err != nil || n != 1 {
		inc.release(ctx, j)
		if err != nil {
			return j.id, false, fmt.Errorf("set immediate task running: %w", err)
		}
		inc.rowChanged(ctx, q, j, "set-running")
		return j.id, false, commit(ctx, q)
	}
	if inc.execute(ctx, j, f.cfg.ImmediateDuration, false) == outcomeKilled {
		return j.id, false, ctx.Err()
	}
	if _, err := inc.check(ctx, q, j, "set-completed", false); err != nil {
		f.noteError(ctx, name, "check before set-completed", err)
	}
	ok, err := f.finish(ctx, q, name, j.id, inc.rowID, StateCompleted, nil, StateRunning)
	if err != nil {
		inc.release(ctx, j)
		return j.id, false, err
	}
	if !ok {
		inc.rowChanged(ctx, q, j, "set-completed")
	} else {
		f.counters.completed.Add(1)
		f.counters.immediateRun.Add(1)
	}
	if f.fire(FaultImmediateRelease) {
		f.recordFault(FaultImmediateRelease, name, j.id, "release failed, locks kept")
		return j.id, true, commit(ctx, q)
	}
	if _, err := inc.check(ctx, q, j, "release", false); err != nil {
		f.noteError(ctx, name, "check before release", err)
	}
	inc.release(ctx, j)
	return j.id, true, commit(ctx, q)
}

// commit ends the request transaction, if there is one.
func commit(ctx context.Context, q querier) error {
	if tx, ok := q.(pgx.Tx); ok {
		if err := tx.Commit(ctx); err != nil {
			return fmt.Errorf("commit request transaction: %w", err)
		}
	}
	return nil
}
