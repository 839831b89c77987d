package sim

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lock-reaper/lock-reaper/internal/ctxwait"
)

// How a worker stops on its own, as pulpcore's does (redis_worker.py):
// SIGTERM asks it to finish its task and go (task_grace_timeout None: it
// waits for the task however long), then it deletes its own row, which, by
// Django's ON DELETE SET NULL, unclaims its tasks. A failed heartbeat write
// (handle_worker_heartbeat) or Redis PING (handle_redis_heartbeat) asks it to
// go at once: the running task is aborted (locks released, canceling, then
// failed "Aborted during worker shutdown."; if that write fails, the locks
// are released again and the task stays as it was), then the row is deleted
// if the database lets it. A write that stalls shuts nothing down.

const (
	shutdownNone int32 = iota
	shutdownGraceful
	shutdownAbort
)

// abortReason is pulpcore's error reason of a task its worker aborted.
const abortReason = "Aborted during worker shutdown."

// requestShutdown asks the incarnation to stop; an abort overrides a
// graceful request, never the other way round.
func (inc *incarnation) requestShutdown(mode int32, reason string) {
	for {
		cur := inc.shutdown.Load()
		if cur >= mode {
			return
		}
		if inc.shutdown.CompareAndSwap(cur, mode) {
			inc.shutdownReason.Store(&reason)
			return
		}
	}
}

func (inc *incarnation) aborting() bool { return inc.shutdown.Load() == shutdownAbort }

// abortTask is the supervisor's abort of a task on shutdown.
func (inc *incarnation) abortTask(ctx context.Context, j *job) {
	f, name := inc.p.f, inc.p.name
	f.counters.aborted.Add(1)
	_, relErr := Release(ctx, f.rdb, j.id, j.owner, j.exclusive, j.shared)
	_, err := f.exec(ctx, f.pool, name, sqlSetCanceling, j.id, inc.rowID)
	if err == nil {
		var ok bool
		ok, err = f.finish(ctx, f.pool, name, j.id, inc.rowID, StateFailed, strPtr(abortReason), StateCanceling)
		if ok {
			f.counters.failed.Add(1)
		}
	}
	if err != nil || relErr != nil {
		// pulpcore's except branch: release again, whatever happened.
		_, _ = Release(ctx, f.rdb, j.id, j.owner, j.exclusive, j.shared)
	}
}

// exit ends a worker that was asked to shut down: it deletes its row (its
// tasks' claims go with it), ends the incarnation and, after a failure (not
// a SIGTERM), restarts it under its old name with Config.RestartAfterShutdown.
func (inc *incarnation) exit() {
	f, p := inc.p.f, inc.p
	deleted := inc.deleteOwnRow()
	f.mu.Lock()
	ended := p.cur == inc && !p.killed
	if ended {
		p.killed = true
		if p.pod != nil {
			p.pod.endContainer(time.Now())
		}
	}
	removed := p.removed
	f.mu.Unlock()
	inc.cancel()
	if !ended {
		return
	}
	f.counters.shutdowns.Add(1)
	reason := "shut down"
	if r := inc.shutdownReason.Load(); r != nil {
		reason = *r
	}
	detail := reason + "; row kept"
	if deleted {
		detail = reason + "; row deleted"
	}
	f.recordFault(FaultShutdown, p.name, "", detail)
	after := f.cfg.RestartAfterShutdown
	if inc.shutdown.Load() != shutdownAbort || after <= 0 || removed {
		return
	}
	f.spawn(func(ctx context.Context) {
		<-inc.done
		if !ctxwait.Sleep(ctx, after) {
			return
		}
		// The container restarts until its process comes up: a database
		// still read-only or a Redis still down fail the start.
		for {
			err := f.Restart(ctx, p.name)
			if err == nil || ctx.Err() != nil {
				return
			}
			f.log.Info("restart after shutdown failed; retrying", "process", p.name, "error", err)
			if !ctxwait.Sleep(ctx, after) {
				return
			}
		}
	})
}

// deleteOwnRow is the worker's app_status.delete(): its tasks' claims set to
// NULL first, as Django's ON DELETE SET NULL does. It reports whether the
// row is gone.
func (inc *incarnation) deleteOwnRow() bool {
	f, ctx := inc.p.f, inc.ctx
	err := f.beforeStatement(ctx, inc.p.name)
	if err == nil {
		err = pgx.BeginFunc(ctx, f.pool, func(q pgx.Tx) error {
			if _, err := q.Exec(ctx, `UPDATE core_task SET app_lock_id = NULL WHERE app_lock_id = $1`, inc.rowID); err != nil {
				return err
			}
			_, err := q.Exec(ctx, `DELETE FROM core_appstatus WHERE pulp_id = $1`, inc.rowID)
			return err
		})
	}
	if err != nil {
		f.log.Info("worker could not delete its row on shutdown", "process", inc.p.name, "error", err)
		return false
	}
	return true
}

// Terminate sends a worker SIGTERM, as a scale-down or a rolling upgrade
// does: it finishes its task and deletes its row. If it is still running
// after grace, it gets SIGKILL (Kill), as Kubernetes does at the end of
// terminationGracePeriodSeconds, and its row, claims and locks stay. Either
// way it is never restarted. killed says whether it took the SIGKILL.
func (f *Fleet) Terminate(name string, grace time.Duration) (killed bool, err error) {
	f.mu.Lock()
	p, ok := f.byName[name]
	switch {
	case !ok:
		f.mu.Unlock()
		return false, fmt.Errorf("sim: no process %s", name)
	case p.appType != AppTypeWorker || p.killed || p.cur == nil:
		f.mu.Unlock()
		return false, fmt.Errorf("sim: %s is not a running worker", name)
	}
	p.removed = true
	inc := p.cur
	f.mu.Unlock()
	inc.requestShutdown(shutdownGraceful, "SIGTERM")
	timer := time.NewTimer(grace)
	defer timer.Stop()
	select {
	case <-inc.done:
		return false, nil
	case <-timer.C:
	}
	if _, err := f.markKilled(name); err != nil {
		<-inc.done // it exited just now, by itself
		return false, nil
	}
	inc.cancel()
	<-inc.done
	f.recordFault(FaultKill, name, "", "SIGKILL after a grace period of "+grace.String())
	return true, nil
}
