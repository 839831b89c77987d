package reaper

import (
	"context"
	"fmt"
	"github.com/lock-reaper/lock-reaper/internal/humantext"
	"log/slog"
	"time"

	"github.com/lock-reaper/lock-reaper/reaper/judge"
	"github.com/lock-reaper/lock-reaper/reaper/pulpdb"
	"github.com/lock-reaper/lock-reaper/reaper/redislocks"
)

// Age sources of an UncommittedWrite.
const (
	// AgeFromActivity: the transaction's own age (pg_stat_activity).
	AgeFromActivity = "pg_stat_activity"
	// AgeFromLocks: since a pass first saw the transaction in pg_locks, no
	// more than its age (the role may not see other roles' transactions
	// without pg_read_all_stats).
	AgeFromLocks = "pg_locks"
)

// UncommittedWrite is the session whose uncommitted write to core_task
// held shared memberships back (the guard uncommitted-task-write).
type UncommittedWrite struct {
	// PID is the session's backend process (pg_stat_activity.pid).
	PID int32 `json:"pid"`
	// TransactionAge is how long its transaction had been open, or at
	// least had been seen open (AgeFrom).
	TransactionAge Seconds `json:"transaction_age"`
	AgeFrom        string  `json:"age_from"`
	// Sessions counts the sessions whose write held; Held the memberships
	// left for the next pass.
	Sessions int `json:"sessions"`
	Held     int `json:"held"`
}

// openWrites is what a pass knows of other sessions' uncommitted writes to
// core_task: their first sightings (redislocks.ReadOpenWrites, loaded at
// the pass's first look) and the hold to report.
type openWrites struct {
	seen   map[string]time.Time
	looked bool
	held   UncommittedWrite
}

// mayBeHeld says whether the guarded shared membership at plan position i
// can be held by another session's uncommitted write: its owner may be
// dispatching now.
func (a *actor) mayBeHeld(i int) bool {
	jd := a.plan.Holdings[i]
	return jd.Kind == judge.KindShared && judge.MayDispatch(jd.Owner, jd.Evidence().OwnerLiveness)
}

// openWriteHolds is the pulpdb.Holds of the pass: whether a look's writes
// hold, by judge.HoldingWrite with the remembered first sightings and the
// bound confirm_after. It loads the sightings at its first call.
func (a *actor) openWriteHolds(ctx context.Context) (pulpdb.Holds, error) {
	if a.writes.seen == nil {
		seen, err := redislocks.ReadOpenWrites(ctx, a.r.rdb, a.r.cfg.RedisTimeout)
		if err != nil {
			return nil, inStep("reading the uncommitted writes to core_task earlier passes saw from", SystemRedis, err)
		}
		a.writes.seen = seen
	}
	return func(ws []judge.OpenWrite, now time.Time) bool {
		_, n := judge.HoldingWrite(a.sighted(ws, now), now, a.r.cfg.Policy.ConfirmAfter)
		return n > 0
	}, nil
}

// sighted is ws with their first sightings: the remembered one, or now.
func (a *actor) sighted(ws []judge.OpenWrite, now time.Time) []judge.OpenWrite {
	out := make([]judge.OpenWrite, len(ws))
	for n, w := range ws {
		w.FirstSeen = now
		if at, ok := a.writes.seen[redislocks.OpenWriteField(w)]; ok && at.Before(now) {
			w.FirstSeen = at
		}
		out[n] = w
	}
	return out
}

// holdingWrite settles a check's writes: the write that holds (n > 0), and
// the sightings to remember, those of this look only (a transaction not
// seen again has ended).
func (a *actor) holdingWrite(c pulpdb.SharedCheck) (judge.OpenWrite, int) {
	ws := a.sighted(c.OpenWrites, c.Now)
	seen := make(map[string]time.Time, len(ws))
	for _, w := range ws {
		seen[redislocks.OpenWriteField(w)] = w.FirstSeen
	}
	a.writes.seen, a.writes.looked = seen, true
	return judge.HoldingWrite(ws, c.Now, a.r.cfg.Policy.ConfirmAfter)
}

// noteHeld records that held memberships were left because of w, one of
// sessions writes that hold, seen at now.
func (a *actor) noteHeld(w judge.OpenWrite, sessions, held int, now time.Time) {
	if held == 0 {
		return
	}
	from := AgeFromLocks
	if w.AgeKnown() {
		from = AgeFromActivity
	}
	age := Seconds(w.OpenFor(now))
	h := &a.writes.held
	if h.Held == 0 || age > h.TransactionAge {
		h.PID, h.TransactionAge, h.AgeFrom = w.PID, age, from
	}
	h.Sessions = max(h.Sessions, sessions)
	h.Held += held
	a.r.log.Warn("shared memberships left for the next pass: another session's write to core_task is not committed",
		slog.Int("held", held), slog.Int("pid", int(w.PID)), slog.Duration("transaction_age", time.Duration(age)),
		slog.String("age_from", from), slog.Int("sessions", sessions))
}

// rememberOpenWrites stores the sightings of a pass that looked.
func (a *actor) rememberOpenWrites(ctx context.Context) error {
	if !a.writes.looked || a.dryRun {
		return nil
	}
	return inStep("remembering the uncommitted writes to core_task seen in", SystemRedis,
		redislocks.WriteOpenWrites(ctx, a.r.rdb, a.r.cfg.RedisTimeout, a.r.cfg.SuspectTTL, a.writes.seen))
}

// foreseeHeld marks, for an audit, the shared memberships a real pass
// would release now but leave for another session's uncommitted write, as
// the release would (without the reborn names and reservers it reads, which
// depend on the moment of the release).
func (a *actor) foreseeHeld(ctx context.Context) error {
	var at []int
	for i, res := range a.holdingResults {
		if res == ResultWouldRelease && a.mayBeHeld(i) {
			at = append(at, i)
		}
	}
	if len(at) == 0 {
		return nil
	}
	holds, err := a.openWriteHolds(ctx)
	if err != nil {
		return err
	}
	c, err := pulpdb.ReadSharedCheck(ctx, a.r.pool, a.r.cfg.DatabaseTimeout, nil, nil, 0, nil, holds)
	if err != nil {
		return inStep("reading the uncommitted writes to core_task in", SystemDatabase, err)
	}
	w, n := a.holdingWrite(c)
	if n == 0 {
		return nil
	}
	for _, i := range at {
		a.holdBack(i)
	}
	a.noteHeld(w, n, len(at), c.Now)
	return nil
}

// holdBack leaves the holding at plan position i for the next pass,
// deferred by the uncommitted-task-write guard.
func (a *actor) holdBack(i int) {
	a.holdingResults[i] = ResultDeferred
	a.plan.Holdings[i].Deferred = judge.DeferredUncommittedTaskWrite
}

// openWriteGuard is the guard of a pass that held memberships back.
func (a *actor) openWriteGuard() (Guard, bool) {
	h := a.writes.held
	if h.Held == 0 {
		return Guard{}, false
	}
	return Guard{Name: judge.GuardUncommittedTaskWrite, Reason: uncommittedWriteReason(h, a.r.cfg.Policy.ConfirmAfter), UncommittedWrite: &h}, true
}

// uncommittedWriteReason words the guard: who holds, since when, and what
// ends the hold.
func uncommittedWriteReason(h UncommittedWrite, bound time.Duration) string {
	open := fmt.Sprintf("its transaction open for %s (pg_stat_activity)", h.TransactionAge)
	if h.AgeFrom == AgeFromLocks {
		open = fmt.Sprintf("its transaction seen open for at least %s (pg_locks; grant pg_read_all_stats for its age)", h.TransactionAge)
	}
	others := ""
	if h.Sessions > 1 {
		others = fmt.Sprintf(" (and %d other sessions)", h.Sessions-1)
	}
	return fmt.Sprintf("%d shared memberships of owners that may be dispatching left for the next pass: session pid %d%s holds an uncommitted write to core_task, %s; a task dispatched in a transaction holds its locks while its row is invisible. The hold ends when the transaction commits or rolls back, or once it has been open %s (confirm_after)",
		h.Held, h.PID, others, open, humantext.Short(bound))
}
