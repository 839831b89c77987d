package reaper

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/lock-reaper/lock-reaper/heartbeat"
	"github.com/lock-reaper/lock-reaper/internal/humantext"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
	"github.com/lock-reaper/lock-reaper/reaper/pulpdb"
	"github.com/lock-reaper/lock-reaper/reaper/redislocks"
)

// release applies the releases in batches of at most BatchSize holdings,
// cut by the work of one Lua call (ReleaseCallHoldings), a call each unless
// the reserving tasks read before a batch make it several.
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
	rel := &redislocks.Releaser{RDB: a.r.rdb, Timeout: a.r.cfg.RedisTimeout, Log: a.r.log, CallHoldings: a.r.cfg.ReleaseCallHoldings}
	end, err := rel.BatchEnds(ctx, a.plan.Holdings, todo, a.r.cfg.BatchSize)
	if err != nil {
		a.failHoldings(todo)
		return err
	}
	forget, err := rel.RememberSeen(ctx, redislocks.SeenRegistries(a.holdings, a.plan.Holdings), redislocks.GuardedOwners(a.plan.Holdings, todo))
	switch {
	case isOOM(err):
		// Released without them: the script then leaves a guarded holding
		// alone when its owner's registry lists a task lock.
		a.bookkeepingRefused(RecordRegistriesSeen, "a live owner's guarded holdings were left alone when its registry lists a task lock", err)
		forget = func() {}
	case err != nil:
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
			b.Guarded[n] = judge.Guarded(jd)
			if l := jd.Evidence().OwnerLiveness; (l == heartbeat.Dead || l == heartbeat.Gone) && !retired[jd.Owner] {
				retired[jd.Owner] = true
				b.Retire = append(b.Retire, jd.Owner)
			}
		}
		leave, err := a.checkShared(ctx, idx, &b)
		if err != nil {
			return err
		}
		left := leftAlone(leave)
		sent, sentIdx := b.Without(left), without(idx, left)
		outcomes, err := rel.Release(context.WithoutCancel(ctx), sent)
		if err != nil && outcomes == nil {
			return err
		}
		for n, i := range sentIdx {
			a.holdingResults[i] = releaseResults[outcomes[n]]
			if outcomes[n] == redislocks.TooManyReservers {
				a.plan.Holdings[i].Deferred = judge.DeferredTooManyReservers
			}
		}
		for n, i := range idx {
			switch leave[n] {
			case ResultOwnerChanged:
				a.holdingResults[i] = ResultOwnerChanged
			case ResultDeferred:
				// A crowded resource's membership has its result and reason.
				if a.holdingResults[i] != ResultDeferred {
					a.holdBack(i)
				}
			}
		}
		if err != nil {
			// A failed call's holdings were read again: what it did is
			// logged, the rest of the batch fails.
			a.failHoldings(idx)
			done := slices.DeleteFunc(slices.Clone(idx), func(i int) bool { return a.holdingResults[i] == ResultFailed })
			logs.add(done, resultsAt(a.holdingResults, done))
			return err
		}
		logs.add(idx, resultsAt(a.holdingResults, idx))
		a.progress(PhaseReleasing, done+len(idx), len(todo))
		return nil
	})
}

// resultsAt is results at the positions idx.
func resultsAt(results []Result, idx []int) []Result {
	out := make([]Result, len(idx))
	for n, i := range idx {
		out[n] = results[i]
	}
	return out
}

// leftAlone marks the positions of a batch that checkShared gave a result:
// those the release call must not be sent.
func leftAlone(leave []Result) []bool {
	left := make([]bool, len(leave))
	for n, res := range leave {
		left[n] = res != ""
	}
	return left
}

// without is idx less the positions leave marks.
func without(idx []int, leave []bool) []int {
	out := make([]int, 0, len(idx))
	for n, i := range idx {
		if !leave[n] {
			out = append(out, i)
		}
	}
	return out
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

// checkShared reads, just before the release call, what may have made a
// guarded shared membership of the batch a new task's since the snapshot,
// and returns, by position of the batch, the result of those to leave alone
// without asking Redis ("" for the others):
//   - a name judged dead or gone that has a row alive or late now: the name
//     was reborn (a worker restarted under the same {pid}@{hostname}), and
//     the new process may take, or have taken, a task reserving the
//     resource. A worker writes its row before it fetches a task, so a
//     reborn name that took a task shows here (owner-changed);
//   - for an owner that may be dispatching now (judge.MayDispatch: alive,
//     late or immediate-<uuid>), another session's write to core_task not
//     yet committed, open for less than confirm_after: a task dispatched in
//     a transaction (an immediate task inside a plugin's or a request's
//     atomic block) may hold its locks while its row is invisible to the
//     reservers' read below, and nothing in Redis tells of it without the
//     owner registry (pulpcore before 3.117). Such memberships are deferred
//     by the uncommitted-task-write guard (judge.HoldingWrite). A dead
//     owner cannot be dispatching: someone else's open transaction does
//     not hold its memberships.
//
// It also gives the others the incomplete tasks that reserve their
// resources shared: the release script leaves a membership alone whose
// owner holds the task lock of one of them (a task it took since the
// snapshot, whose acquire found the name in the set already and left no
// trace there). An exclusive lock or a task lock needs none of this:
// pulpcore's acquire fails on a key that exists, so no new task takes it
// while it stands.
func (a *actor) checkShared(ctx context.Context, idx []int, b *redislocks.Batch) ([]Result, error) {
	leave := make([]Result, len(idx))
	var resources, notLive []string
	mayBeHeld := false
	for n, h := range b.Holdings {
		if !b.Guarded[n] || h.Kind != judge.KindShared {
			continue
		}
		if a.crowded[h.Resource()] {
			leave[n] = ResultDeferred
			a.holdingResults[idx[n]] = ResultDeferred
			a.plan.Holdings[idx[n]].Deferred = judge.DeferredTooManyReservers
			continue
		}
		resources = append(resources, h.Resource())
		if l := a.plan.Holdings[idx[n]].Evidence().OwnerLiveness; (l == heartbeat.Dead || l == heartbeat.Gone) && h.Owner != a.declaredDead {
			notLive = append(notLive, h.Owner)
		}
		mayBeHeld = mayBeHeld || a.mayBeHeld(idx[n])
	}
	if len(resources) == 0 {
		return leave, nil
	}
	db := context.WithoutCancel(ctx)
	var holds pulpdb.Holds
	if mayBeHeld {
		var err error
		if holds, err = a.openWriteHolds(db); err != nil {
			return nil, err
		}
	}
	check, err := pulpdb.ReadSharedCheck(db, a.r.pool, a.r.cfg.DatabaseTimeout, resources, notLive, a.r.cfg.Policy.HeartbeatGrace,
		a.reserverFor(b), holds)
	if err != nil {
		return nil, inStep("reading what may have taken the shared resources to release in", SystemDatabase, err)
	}
	var holder judge.OpenWrite
	sessions, held := 0, 0
	if mayBeHeld {
		holder, sessions = a.holdingWrite(check)
	}
	for n, h := range b.Holdings {
		if !b.Guarded[n] || h.Kind != judge.KindShared || a.crowded[h.Resource()] {
			continue
		}
		switch {
		case check.LiveNames[h.Owner]:
			leave[n] = ResultOwnerChanged
			a.r.log.Warn("owner's name reborn during the pass: its shared membership is left", slog.String("owner", h.Owner), slog.String("key", h.Key))
		case sessions > 0 && a.mayBeHeld(idx[n]):
			leave[n] = ResultDeferred
			held++
		}
	}
	a.noteHeld(holder, sessions, held, check.Now)
	b.Reservers = a.reserversOf(b, leftAlone(leave), check.Reservers)
	return leave, nil
}

// reserverFor says whether a task reserving a resource shared may be a new
// task of the owner of one of the batch's guarded memberships of it: a task
// whose stale lock the plan saw held by the resource's only owner in the
// batch is none, and is dropped as it is read.
func (a *actor) reserverFor(b *redislocks.Batch) pulpdb.Relevant {
	owners := sharedOwners(b, nil)
	return func(resource, id string) bool {
		o := owners[resource]
		return len(o) != 1 || !o[a.plan.StaleHolder(id)]
	}
}

// sharedOwners lists, by resource, the owners of the batch's guarded shared
// memberships that leave does not mark.
func sharedOwners(b *redislocks.Batch, leave []bool) map[string]map[string]bool {
	owners := map[string]map[string]bool{}
	for n, h := range b.Holdings {
		if !b.Guarded[n] || h.Kind != judge.KindShared || (leave != nil && leave[n]) {
			continue
		}
		if owners[h.Resource()] == nil {
			owners[h.Resource()] = map[string]bool{}
		}
		owners[h.Resource()][h.Owner] = true
	}
	return owners
}

// reserversOf gives each lock key of the guarded shared memberships the
// batch sends the incomplete tasks reserving its resource (reservers, by
// resource), once, however many owners hold a membership of it. A task the
// snapshot saw held by one of those owners, whose lock the plan does not
// keep, names that owner (StaleFor): a stale lock of the owner's own (a dead
// worker's lost task, a live one's leaked lock) says nothing of a task
// taken since, and its release may be deferred past this membership's. A
// task stale for the only owner of the resource is no reserver at all.
func (a *actor) reserversOf(b *redislocks.Batch, leave []bool, reservers map[string][]string) map[string][]redislocks.Reserver {
	out := map[string][]redislocks.Reserver{}
	for resource, owners := range sharedOwners(b, leave) {
		rs := make([]redislocks.Reserver, 0, len(reservers[resource]))
		for _, id := range reservers[resource] {
			stale := a.plan.StaleHolder(id)
			if !owners[stale] {
				stale = ""
			} else if len(owners) == 1 {
				continue
			}
			rs = append(rs, redislocks.Reserver{ID: id, StaleFor: stale})
		}
		out[judge.ResourceKeyPrefix+resource] = rs
	}
	return out
}

// releaseResults are the results of the release script's outcomes.
var releaseResults = map[redislocks.Outcome]Result{
	redislocks.Released: ResultReleased, redislocks.AlreadyGone: ResultAlreadyGone, redislocks.OwnerChanged: ResultOwnerChanged,
	redislocks.TooManyReservers: ResultDeferred, redislocks.StillHeld: ResultFailed,
}

// failHoldings marks the holdings of idx that have no result yet failed.
func (a *actor) failHoldings(idx []int) {
	for _, i := range idx {
		if a.holdingResults[i] == "" {
			a.holdingResults[i] = ResultFailed
		}
	}
}

// LogReleasedHolding is the message of the log line each released holding
// gets (the audit trail), for a log handler that sums them up instead.
const LogReleasedHolding = "released holding"

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
	a.r.log.LogAttrs(context.Background(), level, LogReleasedHolding, attrs...)
}

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

// releaseLog logs the results of the release batches on a goroutine of its
// own: formatting a line per holding (a few microseconds each, thousands per
// batch) then overlaps the next batch's wait on Redis instead of delaying
// it. Lines keep their order, and wait returns only once every batch handed
// to add is logged, so a pass's release lines all come before what follows.
type releaseLog struct {
	a       *actor
	batches chan loggedBatch
	done    chan struct{}
}

// loggedBatch is one batch's holdings (indexes into the plan) and results.
type loggedBatch struct {
	idx     []int
	results []Result
}

// releaseLogBacklog is how many batches may wait to be logged before add
// blocks: logging that falls behind slows the releases rather than piling up.
const releaseLogBacklog = 4

func (a *actor) startReleaseLog() *releaseLog {
	l := &releaseLog{a: a, batches: make(chan loggedBatch, releaseLogBacklog), done: make(chan struct{})}
	go func() {
		defer close(l.done)
		for b := range l.batches {
			for n, i := range b.idx {
				a.logHolding(a.plan.Holdings[i], b.results[n])
			}
		}
	}()
	return l
}

// add hands a batch over; neither slice may change afterwards.
func (l *releaseLog) add(idx []int, results []Result) {
	l.batches <- loggedBatch{idx: idx, results: results}
}

// wait returns once every batch added is logged; add must not be called
// after it.
func (l *releaseLog) wait() {
	close(l.batches)
	<-l.done
}
