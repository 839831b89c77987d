package reaper

import (
	"cmp"
	"context"
	"log/slog"
	"slices"
	"strings"

	"github.com/lock-reaper/lock-reaper/heartbeat"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
	"github.com/lock-reaper/lock-reaper/reaper/pulpdb"
	"github.com/lock-reaper/lock-reaper/reaper/redislocks"
)

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
		sent, sentIdx := b.Without(leave), without(idx, leave)
		outcomes, err := rel.Release(context.WithoutCancel(ctx), sent)
		if err != nil {
			return err
		}
		for n, i := range sentIdx {
			a.holdingResults[i] = releaseResults[outcomes[n]]
		}
		results := make([]Result, len(idx))
		for n, i := range idx {
			if leave[n] {
				a.holdingResults[i] = ResultOwnerChanged
			}
			results[n] = a.holdingResults[i]
		}
		logs.add(idx, results)
		a.progress(PhaseReleasing, done+len(idx), len(todo))
		return nil
	})
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
// and returns the positions of the batch to leave alone (owner-changed)
// without asking Redis:
//   - a name judged dead or gone that has a row alive or late now: the name
//     was reborn (a worker restarted under the same {pid}@{hostname}), and
//     the new process may take, or have taken, a task reserving the
//     resource. A worker writes its row before it fetches a task, so a
//     reborn name that took a task shows here;
//   - another session's write to core_task not yet committed: a task
//     dispatched in a transaction (an immediate task inside a plugin's or a
//     request's atomic block) may hold its locks while its row is invisible
//     to the reservers' read below, and nothing in Redis tells of it without
//     the owner registry (pulpcore before 3.117).
//
// It also gives the others the incomplete tasks that reserve their
// resources shared: the release script leaves a membership alone whose
// owner holds the task lock of one of them (a task it took since the
// snapshot, whose acquire found the name in the set already and left no
// trace there). An exclusive lock or a task lock needs none of this:
// pulpcore's acquire fails on a key that exists, so no new task takes it
// while it stands.
func (a *actor) checkShared(ctx context.Context, idx []int, b *redislocks.Batch) ([]bool, error) {
	leave := make([]bool, len(idx))
	var resources, notLive []string
	for n, h := range b.Holdings {
		if !b.Guarded[n] || h.Kind != judge.KindShared {
			continue
		}
		resources = append(resources, h.Resource())
		if l := a.plan.Holdings[idx[n]].Evidence().OwnerLiveness; (l == heartbeat.Dead || l == heartbeat.Gone) && h.Owner != a.declaredDead {
			notLive = append(notLive, h.Owner)
		}
	}
	if len(resources) == 0 {
		return leave, nil
	}
	db := context.WithoutCancel(ctx)
	check, err := pulpdb.ReadSharedCheck(db, a.r.pool, a.r.cfg.DatabaseTimeout, resources, notLive, a.r.cfg.Policy.HeartbeatGrace,
		a.reserverFor(b))
	if err != nil {
		return nil, inStep("reading what may have taken the shared resources to release in", SystemDatabase, err)
	}
	if check.UncommittedTaskWrites > 0 {
		a.r.log.Info("leaving shared memberships for the next pass: a write to core_task is not committed yet",
			slog.Int("sessions", check.UncommittedTaskWrites))
	}
	b.Reservers = make([][]string, len(b.Holdings))
	for n, h := range b.Holdings {
		if !b.Guarded[n] || h.Kind != judge.KindShared {
			continue
		}
		switch {
		case check.UncommittedTaskWrites > 0:
			leave[n] = true
		case check.LiveNames[h.Owner]:
			leave[n] = true
			a.r.log.Warn("owner's name reborn during the pass: its shared membership is left", slog.String("owner", h.Owner), slog.String("key", h.Key))
		default:
			b.Reservers[n] = a.newReservers(check.Reservers[h.Resource()], h.Owner)
		}
	}
	return leave, nil
}

// reserverFor says whether a task reserving a resource shared may be a new
// task of the owner of one of the batch's guarded memberships of it
// (newReservers keeps it for that owner): the others are dropped as they
// are read.
func (a *actor) reserverFor(b *redislocks.Batch) pulpdb.Relevant {
	owners := map[string][]string{}
	for n, h := range b.Holdings {
		if b.Guarded[n] && h.Kind == judge.KindShared {
			owners[h.Resource()] = append(owners[h.Resource()], h.Owner)
		}
	}
	return func(resource, id string) bool {
		for _, owner := range owners[resource] {
			if !a.plan.HoldsAsStale(id, owner) {
				return true
			}
		}
		return false
	}
}

// newReservers is reservers less the tasks whose task lock the snapshot saw
// held by owner and the plan does not keep: a stale lock of the owner's own
// (a dead worker's lost task, a live one's leaked lock) says nothing of a
// task taken since, and its release may be deferred past this membership's.
func (a *actor) newReservers(reservers []string, owner string) []string {
	out := reservers[:0:0]
	for _, id := range reservers {
		if !a.plan.HoldsAsStale(id, owner) {
			out = append(out, id)
		}
	}
	return out
}

// releaseResults are the results of the release script's outcomes.
var releaseResults = map[redislocks.Outcome]Result{
	redislocks.Released: ResultReleased, redislocks.AlreadyGone: ResultAlreadyGone, redislocks.OwnerChanged: ResultOwnerChanged,
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
