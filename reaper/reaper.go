// Package reaper finds and releases stale Pulp locks and lost tasks.
//
// One pass reads a snapshot (the pods when Kubernetes evidence is on, then
// Redis, then the database), judges it with the pure function Judge, acts on
// the plan with writes that are each conditional on what was observed, and
// returns a Report of what it found and did.
package reaper

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/lock-reaper/lock-reaper/heartbeat"
	"github.com/lock-reaper/lock-reaper/reaper/history"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
	"github.com/lock-reaper/lock-reaper/reaper/pulpdb"
	"github.com/lock-reaper/lock-reaper/reaper/redislocks"
	"github.com/redis/go-redis/v9"
)

// Modes of a pass, as reports name them.
const (
	ModeAudit   = "audit"
	ModeOnce    = "once"
	ModeRelease = "release"
)

// Reaper runs passes against one Redis and one database.
type Reaper struct {
	cfg  Config
	rdb  redis.UniversalClient
	pool *pgxpool.Pool
	log  *slog.Logger
	// pods remembers the pods earlier passes' lists showed.
	pods podMemory
	// recent are the recent reads of the heartbeats (readings, read.go).
	recent readings
	// signalCheckLimit bounds the tasks whose cancel signal one pass checks
	// (checkCancelSignals).
	signalCheckLimit int
}

// New validates the configuration and returns a Reaper.
func New(cfg Config, rdb redis.UniversalClient, pool *pgxpool.Pool, logger *slog.Logger) (*Reaper, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	// Each pass counts its own calls (RedisLoad); nothing else is counted.
	installLoadHook(rdb)
	return &Reaper{cfg: cfg, rdb: rdb, pool: pool, log: logger, signalCheckLimit: signalCheckLimit}, nil
}

// Options choose what kind of pass to run.
type Options struct {
	// Mode is ModeAudit (dry run: writes nothing), ModeOnce or ModeRelease.
	Mode string
	// RegistryOnly skips the keyspace SCAN and reads only the owner registry;
	// legacy locks are then not seen.
	RegistryOnly bool
	// Progress, when set, is told how many lock keys have been read.
	Progress func(keys int)
	// Phase, when set, is told as the pass moves on (see PhaseReleasing).
	Phase func(phase string, done, total int)
	// ReleaseOwner, when set, makes the pass the break-glass release of that
	// one owner (`lock-reaper release`): see judge.OwnerRelease.
	ReleaseOwner string
	// Snapshot, when set, is handed the pass's snapshot once it is judged,
	// with how many holdings the plan found stale (or to confirm), for the
	// status page; it must not change it and must return at once. A
	// snapshot it keeps is kept through the pass's writes.
	Snapshot func(snap judge.Snapshot, findings int)
	// History, when set (HistoryOnce, HistoryRun, HistoryRelease), records
	// the pass under that name in the history of passes once it is over;
	// an audit is never recorded.
	History string
}

// RunOnce runs one pass. The returned report is never nil; the error says why
// the pass could not complete, and is also in the report.
func (r *Reaper) RunOnce(ctx context.Context, opts Options) (*Report, error) {
	return r.run(ctx, opts, nil)
}

// run runs one pass; adjust, a hook for the tests only (export_test.go),
// may change the plan before it is acted on, keeping its invariants.
func (r *Reaper) run(ctx context.Context, opts Options, adjust func(*judge.Plan)) (*Report, error) {
	if opts.Mode == "" {
		opts.Mode = ModeOnce
	}
	start := time.Now()
	rep := &Report{Mode: opts.Mode, StartedAt: start.UTC(), clock: newPhaseClock(start)}
	// The pass's calls carry its counters; the daemon's other reads on the
	// same client (status page, heartbeat polls) have contexts of their own
	// and are not counted, even while a pass runs.
	ctx, load := withPassLoad(ctx)
	err := r.runPass(ctx, opts, rep, adjust)
	rep.DurationMS = time.Since(rep.StartedAt).Milliseconds()
	if err != nil {
		rep.Error = err.Error()
		r.log.Error("pass failed", slog.String("mode", opts.Mode), slog.String("error", err.Error()))
	}
	rep.summarizeAll()
	r.recordPass(ctx, opts, rep, err)
	rep.clock.done(TimeRecord)
	rep.PhaseTimes = rep.clock.times
	// Every goroutine of the pass is done: the counts are final.
	rep.RedisLoad = load.report()
	return rep, err
}

func (r *Reaper) runPass(ctx context.Context, opts Options, rep *Report, adjust func(*judge.Plan)) error {
	dryRun := opts.Mode == ModeAudit
	if !dryRun {
		lock, got, err := pulpdb.AcquirePassLock(ctx, r.pool, r.cfg.DatabaseTimeout, r.cfg.CoordinateWithPulpcore)
		if err != nil {
			if wc := (*pulpdb.WritableCheckError)(nil); errors.As(err, &wc) {
				err = inStep("checking that the database takes writes in", SystemDatabase, wc.Err)
			}
			return inStep("taking the pass lock in", SystemDatabase, err)
		}
		if !got {
			rep.Skipped = "another lock-reaper or pulpcore's worker cleanup holds the advisory lock"
			r.log.Info("pass skipped", slog.String("reason", rep.Skipped))
			return nil
		}
		defer lock.Release()
		if err := pulpdb.CheckSecondConnection(ctx, r.pool, r.cfg.DatabaseTimeout); err != nil {
			return fmt.Errorf("%w: %w", errNoSnapshot, err)
		}
		// As the database is asked whether it takes writes: a writable
		// replica would take the releases while Pulp's primary keeps them.
		if err := redislocks.CheckPrimary(ctx, r.rdb, r.cfg.RedisTimeout); err != nil {
			return inStep("checking that Redis is the primary in", SystemRedis, err)
		}
		rep.redisPrimary = true
		rep.clock.done(TimeChecks)
	}

	rd, err := r.read(ctx, opts, rep.clock)
	// The record of the pods seen is the one Redis write outside the act
	// phase, made even when the read failed after the pods were listed: a
	// pod's absence proves a death only for a pod some pass saw (podMemory),
	// so later passes, and other replicas, prove absences with this record
	// whatever becomes of this pass.
	if !dryRun {
		r.recordPodsSeen(ctx, rd.podsSeen)
	}
	rep.noteRead(rd)
	if err != nil {
		return err
	}
	snap := rd.snap
	// A break-glass release is the operator's word that the owner died.
	if opts.ReleaseOwner == "" {
		var note string
		if snap.Motion, note, err = r.settleDeaths(ctx, snap, rd.readAt, opts, rep.clock); err != nil {
			return err
		}
		if note != "" {
			rep.Notes = append(rep.Notes, note)
		}
		rep.noteMotion(snap.Motion, snap.AppStatuses)
	}
	// Before the first write, which no pass makes without a snapshot.
	var primary redislocks.Primary
	primaryKnown, checkErr := false, error(nil)
	if !dryRun {
		primary, primaryKnown, checkErr = r.checkCancelSignals(ctx, rep)
		rep.clock.done(TimeSignalCheck)
	}
	plan := judgeFor(snap, r.cfg.Policy, opts)
	if opts.Snapshot != nil {
		opts.Snapshot(snap, len(plan.Holdings))
	}
	rep.NextChange = judge.NextChange(snap, plan, r.cfg.Policy)
	// Taken now, so that the snapshot's tasks are not kept through the
	// actor's work: a dead worker's hundred thousand are megabytes.
	unguarded := unguardedOf(plan.Tasks, snap.Tasks, snap.Holdings)
	r.noteKubernetes(&plan, rep)
	if adjust != nil {
		adjust(&plan)
	}
	rep.Guards = append(rep.Guards, GuardsOf(plan.Guards)...)
	for _, g := range rep.Guards {
		r.log.Warn("guard held work back", slog.String("guard", g.Name), slog.String("reason", g.Reason))
	}
	act := &actor{r: r, plan: &plan, holdings: snap.Holdings, dryRun: dryRun, phase: opts.Phase,
		declaredDead: declaredDead(snap, r.cfg.Policy.HeartbeatGrace, opts.ReleaseOwner)}
	if !dryRun {
		act.crowded = crowdedShared(snap, &plan, redislocks.ReserverCallLimit(r.cfg.ReleaseCallHoldings))
	}
	// Nothing reads the snapshot past this point but its rows and clock, so
	// that its tasks (a dead worker's hundred thousand) are not kept through
	// the actor's work unless opts.Snapshot kept them.
	rows, now := snap.AppStatuses, snap.Now
	rep.clock.done(TimeJudge)
	err = errors.Join(act.run(ctx), checkErr)
	if g, ok := act.openWriteGuard(); ok {
		rep.Guards = append(rep.Guards, g)
		r.log.Warn("guard held work back", slog.String("guard", g.Name), slog.String("reason", g.Reason))
	}
	if primaryKnown {
		r.notePrimaryChange(ctx, rep, primary)
	}
	rep.clock.done(TimeWrites)
	rep.fill(&plan, act)
	rep.ReleaseDelays = releaseDelays(rows, now, &plan, rep, r.cfg.Policy.HeartbeatGrace)
	for i := range rep.Tasks {
		rep.Tasks[i].Resources = unguarded[rep.Tasks[i].ID]
	}
	return err
}

// judgeFor judges a snapshot the way the pass options ask: a normal pass, or
// the break-glass release of one owner.
func judgeFor(snap judge.Snapshot, p judge.Policy, opts Options) judge.Plan {
	if opts.ReleaseOwner != "" {
		return judge.OwnerRelease(snap, p, opts.ReleaseOwner)
	}
	return judge.Findings(snap, p)
}

// declaredDead is the owner a forced break-glass release declares dead over
// the live heartbeat the snapshot saw, or "". That heartbeat is no rebirth:
// the shared-membership check must not read it as one.
func declaredDead(snap judge.Snapshot, grace time.Duration, owner string) string {
	if owner == "" {
		return ""
	}
	if heartbeat.NewFleet(snap.AppStatuses, snap.Now, grace).Owner(owner).Liveness != heartbeat.Alive {
		return ""
	}
	return owner
}

// Phases of a pass, as Options.Phase names them.
const (
	// PhaseReadingDatabase: the locks are read; the database is next.
	PhaseReadingDatabase = "reading database"
	// PhaseReleasing: a batch of releases is done (done of total holdings).
	PhaseReleasing = "releasing"
	// PhaseUpdatingTasks: a batch of task updates is done (done of total).
	PhaseUpdatingTasks = "updating tasks"
)

// phase tells opts.Phase, when set, where the pass is.
func (o Options) phase(name string, done, total int) {
	if o.Phase != nil {
		o.Phase(name, done, total)
	}
}

// Modes a pass is recorded under in the history of passes (Options.History):
// the command that ran it, so that a page can tell a CronJob's `once` from a
// daemon's pass.
const (
	HistoryOnce    = "once"
	HistoryRun     = "run"
	HistoryRelease = "release"
)

// recordPass adds the pass to the history of passes (reaper/history), after
// it: a summary others' status pages read. It never fails the pass: a
// failure is logged and marked on the report, for the metric. It writes
// nothing where a pass may not write: no dry run, no skipped pass (the
// reaper holding the lock records its own), and nothing on a Redis that is
// no primary, which the pass checked (redisPrimary) or is asked here when
// the pass stopped before its check.
func (r *Reaper) recordPass(ctx context.Context, opts Options, rep *Report, passErr error) {
	if opts.History == "" || opts.Mode == ModeAudit || rep.Skipped != "" {
		return
	}
	// A pass cut short (the daemon stopping) is still recorded.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.cfg.RedisTimeout)
	defer cancel()
	var np *redislocks.NotPrimaryError
	if errors.As(passErr, &np) {
		return
	}
	if !rep.redisPrimary {
		if err := redislocks.CheckPrimary(ctx, r.rdb, r.cfg.RedisTimeout); err != nil {
			if errors.As(err, &np) {
				return
			}
			r.historyFailed(rep, err)
			return
		}
	}
	e := history.Entry{At: rep.StartedAt, Mode: opts.History, Duration: time.Duration(rep.DurationMS) * time.Millisecond,
		Stale: rep.StaleCount(), Released: rep.Summary.Released, Updated: rep.Summary.TasksUpdated, Error: rep.Error}
	for _, g := range rep.Guards {
		e.Guards = append(e.Guards, g.Name)
	}
	if err := history.Record(ctx, r.rdb, history.DefaultPrefix, e); err != nil {
		r.historyFailed(rep, err)
	}
}

func (r *Reaper) historyFailed(rep *Report, err error) {
	rep.historyFailed = true
	r.log.Warn("the pass is not in the history of passes; it is done all the same", slog.String("error", err.Error()))
}

// HistoryWriteFailed says the pass could not be recorded in the history of
// passes (lock_reaper_history_write_failures_total).
func (r *Report) HistoryWriteFailed() bool { return r.historyFailed }

// StaleCount counts the holdings the pass found stale or suspect: what the
// status page's history plots.
func (r *Report) StaleCount() int {
	n := 0
	for _, f := range r.Findings {
		if f.Verdict.Finding() {
			n++
		}
	}
	return n
}

// RecentPasses reads the history of passes, newest first: at most limit
// (all kept when limit <= 0), started at or after since, each entry and the
// whole read bounded in size (history.Read). The status page reads it.
func (r *Reaper) RecentPasses(ctx context.Context, since time.Time, limit int) (history.Passes, error) {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.RedisTimeout)
	defer cancel()
	return history.Read(ctx, r.rdb, history.DefaultPrefix, since, limit)
}
