package judge

import (
	"time"

	"github.com/lock-reaper/lock-reaper/heartbeat"
)

// What a pass decides about another session's uncommitted write to
// core_task, read just before a release batch with guarded shared
// memberships. pulpcore's dispatch inserts the task row and, for an
// immediate task, takes its locks under the dispatching process's name at
// once; inside a transaction (a plugin's atomic block, ATOMIC_REQUESTS, a
// worker's scheduled dispatch) the row stays invisible to other sessions
// until the commit, and the reservers' read cannot see the task.

// GuardUncommittedTaskWrite names the guard of a pass that left shared
// memberships because another session's write to core_task was not
// committed, and DeferredUncommittedTaskWrite the deferral of each.
const (
	GuardUncommittedTaskWrite    = "uncommitted-task-write"
	DeferredUncommittedTaskWrite = "uncommitted-task-write guard"
)

// OpenWrite is another session's write to core_task not yet committed, as
// pg_locks and pg_stat_activity show it.
type OpenWrite struct {
	// PID is the session's backend process.
	PID int32
	// Transaction is pg_locks' virtualtransaction: one transaction of one
	// session, never reused while the server runs.
	Transaction string
	// Age is how long the transaction has been open (pg_stat_activity's
	// xact_start, the database clock); nil when the reaper's role may not
	// see it (another role's session, without pg_read_all_stats).
	Age *Duration
	// FirstSeen is when a pass first saw the transaction hold the write
	// (the database clock); zero when none did before.
	FirstSeen time.Time
}

// OpenFor is how long w is known to have been open at now: its age when
// the role may see it, otherwise since a pass first saw it, which is never
// more than its true age.
func (w OpenWrite) OpenFor(now time.Time) time.Duration {
	if w.Age != nil {
		return time.Duration(*w.Age)
	}
	if w.FirstSeen.IsZero() || w.FirstSeen.After(now) {
		return 0
	}
	return now.Sub(w.FirstSeen)
}

// AgeKnown says OpenFor is the transaction's own age, not a lower bound.
func (w OpenWrite) AgeKnown() bool { return w.Age != nil }

// MayDispatch says whether an owner of liveness l, named name, may be
// dispatching a task now, so that another session's uncommitted write may
// be its task's row: a process alive or late, or an immediate-<uuid> owner
// (a task, whatever its row shows). A name judged dead or gone cannot
// dispatch unless it is reborn, which the release check reads apart (a row
// alive again leaves its memberships owner-changed): its memberships owe
// nothing to someone else's open transaction.
func MayDispatch(name string, l heartbeat.Liveness) bool {
	if _, ok := ImmediateTaskID(name); ok {
		return true
	}
	return l == heartbeat.Alive || l == heartbeat.Late
}

// HoldingWrite returns the write of ws that holds the shared memberships of
// owners that may be dispatching, and how many of ws hold them: a write
// holds while it has been open for less than bound (the policy's
// confirm_after). A task whose row stays invisible that long loses its task
// lock and resources anyway (task-missing and no-task, confirmed after
// confirm_after), so a longer hold protects nothing the contract still
// promises, and an idle session (a psql or Django shell left in a
// transaction) would hold them for as long as it stays open. Of the writes
// that hold, the one open longest is returned: the one an operator looks
// at first, and the last to let go.
func HoldingWrite(ws []OpenWrite, now time.Time, bound time.Duration) (OpenWrite, int) {
	var holder OpenWrite
	n := 0
	for _, w := range ws {
		age := w.OpenFor(now)
		if age >= bound {
			continue
		}
		if n == 0 || age > holder.OpenFor(now) {
			holder = w
		}
		n++
	}
	return holder, n
}
