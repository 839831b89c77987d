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

// GuardWritablePrimary names the guard an audit reports when a pass could not
// write to the database: a hot standby, or a read-only session.
const GuardWritablePrimary = "writable-primary"

// GuardRedisPrimary names the guard an audit reports when Redis is no
// primary: a pass would stop before its first write.
const GuardRedisPrimary = "redis-primary"

// Reaper runs passes against one Redis and one database.
type Reaper struct {
	cfg  Config
	rdb  redis.UniversalClient
	pool *pgxpool.Pool
	log  *slog.Logger
	// pods remembers the pods earlier passes' lists showed.
	pods podMemory
	// recent are the recent reads of the heartbeats (settle.go).
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

// errNoSnapshot fails a pass whose database read did not complete: with no
// snapshot there is nothing to judge, so nothing is written. (A skipped pass,
// another reaper holding the lock, is no error: its report has Skipped set.)
var errNoSnapshot = errors.New("no database snapshot, no writes")

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
	rep := &Report{Mode: opts.Mode, StartedAt: time.Now().UTC()}
	err := r.runPass(ctx, opts, rep, adjust)
	rep.DurationMS = time.Since(rep.StartedAt).Milliseconds()
	if err != nil {
		rep.Error = err.Error()
		r.log.Error("pass failed", slog.String("mode", opts.Mode), slog.String("error", err.Error()))
	}
	rep.summarizeAll()
	r.recordPass(ctx, opts, rep, err)
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
	}

	snap, readAt, err := r.snapshot(ctx, opts, rep)
	if err != nil {
		return err
	}
	// A break-glass release is the operator's word that the owner died.
	if opts.ReleaseOwner == "" {
		if snap.Motion, err = r.settleDeaths(ctx, snap, readAt, opts, rep); err != nil {
			return err
		}
		rep.noteMotion(snap.Motion, snap.AppStatuses)
	}
	// Before the first write, which no pass makes without a snapshot.
	var primary redislocks.Primary
	primaryKnown, checkErr := false, error(nil)
	if !dryRun {
		primary, primaryKnown, checkErr = r.checkCancelSignals(ctx, rep)
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
	// Nothing reads the snapshot past this point but its rows and clock, so
	// that its tasks (a dead worker's hundred thousand) are not kept through
	// the actor's work unless opts.Snapshot kept them.
	rows, now := snap.AppStatuses, snap.Now
	err = errors.Join(act.run(ctx), checkErr)
	if g, ok := act.openWriteGuard(); ok {
		rep.Guards = append(rep.Guards, g)
		r.log.Warn("guard held work back", slog.String("guard", g.Name), slog.String("reason", g.Reason))
	}
	if primaryKnown {
		r.notePrimaryChange(ctx, rep, primary)
	}
	rep.fill(&plan, act)
	rep.ReleaseDelays = releaseDelays(rows, now, &plan, rep, r.cfg.Policy.HeartbeatGrace)
	for i := range rep.Tasks {
		rep.Tasks[i].Resources = unguarded[rep.Tasks[i].ID]
	}
	return err
}

// snapshot reads Redis, then the database. A lock seen in Redis was taken
// after its owner's AppStatus row and its task row were written, so reading
// the database second keeps every lock's evidence at least as new as the lock.
//
// The pods are listed first, before Redis and the database: a same-name
// successor that starts during the pass then writes its row before the
// database is read, so the name guard sees it alive, and no pod fact is
// weighed against heartbeats older than itself.
func (r *Reaper) snapshot(ctx context.Context, opts Options, rep *Report) (judge.Snapshot, time.Time, error) {
	pods, podsConfirmed := r.readPods(ctx, rep, opts.Mode == ModeAudit)
	suspects, err := redislocks.ReadSuspects(ctx, r.rdb, r.cfg.RedisTimeout)
	if err != nil {
		return judge.Snapshot{}, time.Time{}, inStep("reading the remembered suspects from", SystemRedis, err)
	}
	seenAlive, err := redislocks.ReadSeenAlive(ctx, r.rdb, r.cfg.RedisTimeout)
	if err != nil {
		return judge.Snapshot{}, time.Time{}, inStep("reading the mass-death guard's memory from", SystemRedis, err)
	}
	rr := &redislocks.Reader{RDB: r.rdb, ScanCount: r.cfg.ScanCount, BatchSize: r.cfg.BatchSize, Timeout: r.cfg.RedisTimeout, Progress: opts.Progress, Log: r.log}
	rs, err := rr.Read(ctx, !opts.RegistryOnly)
	if err != nil {
		return judge.Snapshot{}, time.Time{}, inStep("reading Pulp's locks from", SystemRedis, err)
	}
	opts.phase(PhaseReadingDatabase, 0, 0)
	readAt := time.Now()
	ds, err := pulpdb.ReadSnapshot(ctx, r.pool, r.cfg.DatabaseTimeout, pulpdb.TaskRefsOf(rs.Holdings))
	if err != nil {
		return judge.Snapshot{}, time.Time{}, fmt.Errorf("%w: %w", errNoSnapshot, inStep("reading Pulp's workers and tasks from", SystemDatabase, err))
	}
	if rs.Holdings, err = redislocks.RecheckImmediateLocks(ctx, r.rdb, r.cfg.RedisTimeout, rs.Holdings, ds.Tasks); err != nil {
		return judge.Snapshot{}, time.Time{}, inStep("reading immediate tasks' locks again from", SystemRedis, err)
	}
	// Measured after the database's now, the age is never less than the
	// view's age at that now: a hold on it is never granted too easily.
	pods.WithAge(time.Since(podsConfirmed))
	// A hold on a view too old to hold by itself rests on a list of its own.
	r.confirmHolds(ctx, pods, ds.AppStatuses, ds.Now)
	snap := judge.Snapshot{
		Now: ds.Now, Holdings: rs.Holdings, AppStatuses: ds.AppStatuses,
		Tasks: ds.Tasks, Suspects: suspects, SeenAlive: seenAlive, FullScan: !opts.RegistryOnly,
		Pods: pods,
	}
	rep.DBNow = ds.Now
	r.recent.add(heartbeat.Reading{Now: ds.Now, Rows: ds.AppStatuses})
	if ds.NotWritable != nil {
		// Only an audit gets here: a pass that writes checked first.
		rep.Guards = append(rep.Guards, Guard{Name: GuardWritablePrimary, Reason: ds.NotWritable.Error() + "; a pass would stop before its first write"})
	}
	if opts.Mode == ModeAudit {
		if np := (*redislocks.NotPrimaryError)(nil); errors.As(redislocks.CheckPrimary(ctx, r.rdb, r.cfg.RedisTimeout), &np) {
			rep.Guards = append(rep.Guards, Guard{Name: GuardRedisPrimary, Reason: np.Error() + "; a pass would stop before its first write"})
		}
	}
	rep.Ignored = ignoredOf(rs.Ignored)
	rep.Scanned = Scanned{Keys: rs.Keys, Owners: len(ds.AppStatuses), Tasks: len(ds.Tasks), Ignored: len(rs.Ignored), FullScan: !opts.RegistryOnly}
	for _, h := range rs.Holdings {
		if h.Kind == judge.KindTask {
			rep.Scanned.TaskLocks++
		} else {
			rep.Scanned.ResourceHoldings++
		}
	}
	rep.activeOwners = rs.ActiveOwners
	if note := WorkerTypeNote(len(rs.Holdings), rs.ActiveOwners, ds.AppStatuses, ds.Now); note != "" {
		rep.Notes = append(rep.Notes, note+". To check: "+WorkerTypeFix)
	}
	if note := aheadNote(ds.AppStatuses, ds.Now, r.cfg.Policy.HeartbeatGrace); note != "" {
		rep.Notes = append(rep.Notes, note)
		r.log.Warn("heartbeats ahead of the database clock", slog.String("note", note))
	}
	for _, ig := range rs.Ignored {
		r.log.Warn("ignored key", slog.String("key", ig.Key), slog.String("type", ig.Type), slog.String("reason", ig.Reason))
	}
	return snap, readAt, nil
}

// judgeFor judges a snapshot the way the pass options ask: a normal pass, or
// the break-glass release of one owner.
func judgeFor(snap judge.Snapshot, p judge.Policy, opts Options) judge.Plan {
	if opts.ReleaseOwner != "" {
		return judge.OwnerRelease(snap, p, opts.ReleaseOwner)
	}
	return judge.Findings(snap, p)
}

// OwnerRelease is the plan of a break-glass release of owner on this
// inspection: what `lock-reaper release --owner` would do.
func (in *Inspection) OwnerRelease(owner string) judge.Plan {
	return judge.OwnerRelease(in.Snapshot, in.Policy, owner)
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
