package reaper

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/lock-reaper/lock-reaper/heartbeat"
	"github.com/lock-reaper/lock-reaper/internal/ctxwait"
	"github.com/lock-reaper/lock-reaper/internal/humantext"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
	"github.com/lock-reaper/lock-reaper/reaper/pulpdb"
	"github.com/lock-reaper/lock-reaper/reaper/redislocks"
)

// GuardWritablePrimary names the guard an audit reports when a pass could not
// write to the database: a hot standby, or a read-only session.
const GuardWritablePrimary = "writable-primary"

// GuardRedisPrimary names the guard an audit reports when Redis is no
// primary: a pass would stop before its first write.
const GuardRedisPrimary = "redis-primary"

// readResult is what a pass read, and only that: reading writes nothing
// to the Report nor to Redis. The pass copies it into its Report
// (Report.noteRead) and records the pods it listed (recordPodsSeen);
// Inspect makes its Inspection of it.
type readResult struct {
	// snap is what the judge is given; its Now is the database clock every
	// age is measured against.
	snap judge.Snapshot
	// readAt is when the database read began, on this process's clock:
	// settleDeaths waits from it.
	readAt  time.Time
	scanned Scanned
	ignored []Ignored
	// guards are those an audit finds while reading: a database or a Redis
	// that a pass would not write to.
	guards []Guard
	notes  []string
	// kubernetes is what was read from Kubernetes, nil when that is off.
	kubernetes *KubernetesReport
	// podsSeen is the reaper's memory of the pods with this read's list
	// added, for the record in Redis (recordPodsSeen); nil when no list
	// came back.
	podsSeen map[string]redislocks.SeenPod
	// activeOwners counts the owners pulp:active_owners lists.
	activeOwners int
}

// read reads Redis, then the database. A lock seen in Redis was taken
// after its owner's AppStatus row and its task row were written, so reading
// the database second keeps every lock's evidence at least as new as the lock.
//
// The pods are listed first, before Redis and the database: a same-name
// successor that starts during the pass then writes its row before the
// database is read, so the name guard sees it alive, and no pod fact is
// weighed against heartbeats older than itself.
//
// A read that fails returns what it read before it failed: the pods, which
// the pass records and reports all the same.
func (r *Reaper) read(ctx context.Context, opts Options, clock *phaseClock) (readResult, error) {
	var rd readResult
	pods, podsConfirmed := r.readPods(ctx, &rd)
	// The reaper's own memory is read beside Pulp's locks, and the
	// database's connection opened meanwhile (and the heartbeats read on it,
	// an earlier reading for the deaths to settle on; the snapshot waits
	// for the walk), so that neither waits for the walk of the keyspace nor
	// the walk for them.
	memory := r.readMemory(ctx)
	opened, earlyDone := r.openDatabase(ctx)
	defer earlyDone()
	rr := &redislocks.Reader{RDB: r.rdb, ScanCount: r.cfg.ScanCount, BatchSize: r.cfg.BatchSize, Timeout: r.cfg.RedisTimeout, Progress: opts.Progress, Log: r.log}
	rs, err := rr.Read(ctx, !opts.RegistryOnly)
	mem := <-memory
	openErr := <-opened
	switch {
	case mem.suspectsErr != nil:
		return rd, inStep("reading the remembered suspects from", SystemRedis, mem.suspectsErr)
	case mem.seenAliveErr != nil:
		return rd, inStep("reading the mass-death guard's memory from", SystemRedis, mem.seenAliveErr)
	case err != nil:
		return rd, inStep("reading Pulp's locks from", SystemRedis, err)
	}
	suspects, seenAlive := mem.suspects, mem.seenAlive
	clock.done(TimeRedisRead)
	opts.phase(PhaseReadingDatabase, 0, 0)
	if openErr != nil {
		return rd, fmt.Errorf("%w: %w", errNoSnapshot, inStep("reading Pulp's workers and tasks from", SystemDatabase, openErr))
	}
	earlyDone()
	readAt := time.Now()
	ds, err := pulpdb.ReadSnapshot(ctx, r.pool, r.cfg.DatabaseTimeout, pulpdb.TaskRefsOf(rs.Holdings))
	if err != nil {
		return rd, fmt.Errorf("%w: %w", errNoSnapshot, inStep("reading Pulp's workers and tasks from", SystemDatabase, err))
	}
	if rs.Holdings, err = redislocks.RecheckImmediateLocks(ctx, r.rdb, r.cfg.RedisTimeout, rs.Holdings, ds.Tasks); err != nil {
		return rd, inStep("reading immediate tasks' locks again from", SystemRedis, err)
	}
	// Measured after the database's now, the age is never less than the
	// view's age at that now: a hold on it is never granted too easily.
	pods.WithAge(time.Since(podsConfirmed))
	// A hold on a view too old to hold by itself rests on a list of its own.
	r.confirmHolds(ctx, pods, ds.AppStatuses, ds.Now)
	clock.done(TimeDatabaseRead)
	rd.snap = judge.Snapshot{
		Now: ds.Now, Holdings: rs.Holdings, AppStatuses: ds.AppStatuses,
		Tasks: ds.Tasks, Suspects: suspects, SeenAlive: seenAlive, FullScan: !opts.RegistryOnly,
		Pods: pods, StartsUnread: ds.StartsUnread, Versions: ds.Versions,
	}
	rd.readAt = readAt
	r.recent.add(heartbeat.Reading{Now: ds.Now, Rows: ds.AppStatuses})
	if ds.NotWritable != nil {
		// Only an audit gets here: a pass that writes checked first.
		rd.guards = append(rd.guards, Guard{Name: GuardWritablePrimary, Reason: ds.NotWritable.Error() + "; a pass would stop before its first write"})
	}
	if opts.Mode == ModeAudit {
		if np := (*redislocks.NotPrimaryError)(nil); errors.As(redislocks.CheckPrimary(ctx, r.rdb, r.cfg.RedisTimeout), &np) {
			rd.guards = append(rd.guards, Guard{Name: GuardRedisPrimary, Reason: np.Error() + "; a pass would stop before its first write"})
		}
	}
	rd.ignored = ignoredOf(rs.Ignored)
	rd.scanned = Scanned{Keys: rs.Keys, Owners: len(ds.AppStatuses), Tasks: len(ds.Tasks), Ignored: len(rs.Ignored), FullScan: !opts.RegistryOnly}
	for _, h := range rs.Holdings {
		if h.Kind == judge.KindTask {
			rd.scanned.TaskLocks++
		} else {
			rd.scanned.ResourceHoldings++
		}
	}
	rd.activeOwners = rs.ActiveOwners
	if note := WorkerTypeNote(len(rs.Holdings), rs.ActiveOwners, ds.AppStatuses, ds.Now); note != "" {
		rd.notes = append(rd.notes, note+". To check: "+WorkerTypeFix)
	}
	if note := aheadNote(ds.AppStatuses, ds.Now, r.cfg.Policy.HeartbeatGrace); note != "" {
		rd.notes = append(rd.notes, note)
		r.log.Warn("heartbeats ahead of the database clock", slog.String("note", note))
	}
	for _, ig := range rs.Ignored {
		r.log.Warn("ignored key", slog.String("key", ig.Key), slog.String("type", ig.Type), slog.String("reason", ig.Reason))
	}
	return rd, nil
}

// memory is what the reaper remembers in Redis across passes, as a pass
// reads it.
type memory struct {
	suspects     map[judge.SuspectKey]judge.Suspect
	seenAlive    map[string]judge.SeenAlive
	suspectsErr  error
	seenAliveErr error
}

// readMemory reads the remembered suspects and the mass-death guard's
// memory on a goroutine of its own, and sends them once read.
func (r *Reaper) readMemory(ctx context.Context) <-chan memory {
	out := make(chan memory, 1)
	go func() {
		var m memory
		m.suspects, m.suspectsErr = redislocks.ReadSuspects(ctx, r.rdb, r.cfg.RedisTimeout)
		if m.suspectsErr == nil {
			m.seenAlive, m.seenAliveErr = redislocks.ReadSeenAlive(ctx, r.rdb, r.cfg.RedisTimeout)
		}
		out <- m
	}()
	return out
}

// openDatabase opens a connection to the database while Redis is read,
// when the pool holds none idle (an audit's first statement is the
// snapshot's; a real pass opened one for its pass lock), and sends nil once
// done. A database that did not answer within database.timeout is sent as
// the error, so that the pass fails after one timeout, not two; any other
// failure (a refused connection, which a restarting server gives for a
// moment) is left for the snapshot's read to try again and report.
//
// Once connected it reads the heartbeats, and only them (the snapshot, the
// tasks among it, is read after Redis): an earlier reading for the pass's
// deaths to settle on (settleDeaths), so that a pass whose walk of the
// keyspace outlasts a heartbeat period does not wait a period after its
// snapshot. A reading that fails is dropped: the pass then waits and reads
// again, as it would without it. done, which the pass calls before its
// snapshot, ends a reading still under way (it would come too late to be
// earlier) and waits for it.
func (r *Reaper) openDatabase(ctx context.Context) (opened <-chan error, done func()) {
	out := make(chan error, 1)
	ctx, cancel := context.WithCancel(ctx)
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		if r.pool.Stat().IdleConns() == 0 {
			cctx, cancel := context.WithTimeout(ctx, r.cfg.DatabaseTimeout)
			c, err := r.pool.Acquire(cctx)
			switch {
			case err == nil:
				c.Release()
			case ctx.Err() == nil && errors.Is(cctx.Err(), context.DeadlineExceeded):
				cancel()
				out <- fmt.Errorf("connect within database.timeout (%s): %w", r.cfg.DatabaseTimeout, err)
				return
			default:
				cancel()
				out <- nil
				return
			}
			cancel()
		}
		out <- nil
		if hb, err := pulpdb.ReadHeartbeats(ctx, r.pool, r.cfg.DatabaseTimeout); err == nil {
			r.recent.add(hb)
		} else if ctx.Err() == nil {
			r.log.Debug("the heartbeats' early reading failed: a pass that finds rows dead reads them again a period after its snapshot", slog.String("error", err.Error()))
		}
	}()
	return out, func() { cancel(); <-finished }
}

// PhaseRecheckingHeartbeats: some rows look dead; the pass reads the
// heartbeats again a period later before it acts on them.
const PhaseRecheckingHeartbeats = "rechecking heartbeats"

// readingsKept bounds the recent reads of the heartbeats a Reaper keeps: the
// daemon reads them every few seconds, and a pass needs one read a heartbeat
// period (and the margin) before its own.
const (
	readingsKept   = 32
	readingsMaxAge = 2 * time.Minute
)

// readings are the recent reads of the heartbeats, oldest first: the
// daemon's polls, the passes' snapshots and their second reads. A pass
// whose snapshot has one a period older needs no read of its own.
type readings struct {
	mu   sync.Mutex
	list []heartbeat.Reading
}

// add keeps rd, in the order of the database's clock, and forgets reads
// older than readingsMaxAge before it or beyond readingsKept.
func (rs *readings) add(rd heartbeat.Reading) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if n := len(rs.list); n > 0 && !rd.Now.After(rs.list[n-1].Now) {
		return
	}
	rs.list = append(rs.list, rd)
	drop := 0
	for drop < len(rs.list)-1 && (len(rs.list)-drop > readingsKept || rd.Now.Sub(rs.list[drop].Now) > readingsMaxAge) {
		drop++
	}
	rs.list = append(rs.list[:0:0], rs.list[drop:]...)
}

// before is the newest read at least d older than now, if any.
func (rs *readings) before(now time.Time, d time.Duration) (heartbeat.Reading, bool) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	for i := len(rs.list) - 1; i >= 0; i-- {
		if now.Sub(rs.list[i].Now) >= d {
			return rs.list[i], true
		}
	}
	return heartbeat.Reading{}, false
}

// settleDeaths says what reads of the heartbeats a period apart say of the
// rows the snapshot finds dead and a pass would act on (judge.DeathsToSettle).
// A read the Reaper already has, a period or more before the snapshot (the
// daemon's polls, or the pass's own early reading made while Redis was
// read: openDatabase), may settle them; otherwise the pass waits until a period
// after its snapshot and reads the heartbeats again. readAt is when the
// snapshot's database read began, on this process's clock. A second read
// that fails leaves those rows unsettled, held this pass: it is said, in
// the note returned for the report, not raised. Only a context that ends
// fails the pass.
func (r *Reaper) settleDeaths(ctx context.Context, snap judge.Snapshot, readAt time.Time, opts Options, clock *phaseClock) (m *heartbeat.Motion, note string, err error) {
	ids := judge.DeathsToSettle(snap, r.cfg.Policy)
	if len(ids) == 0 {
		return nil, "", nil
	}
	grace := r.cfg.Policy.HeartbeatGrace
	wait := judge.RecheckAfter(snap.AppStatuses, ids, r.cfg.Policy)
	current := heartbeat.Reading{Now: snap.Now, Rows: snap.AppStatuses}
	if earlier, ok := r.recent.before(snap.Now, wait); ok {
		m = heartbeat.Settle(earlier, current, ids, grace, r.cfg.HeartbeatRecheck)
		if !anyUnsettled(m) {
			return m, "", nil
		}
	}
	r.log.Info("rows look dead: reading their heartbeats again before acting on them",
		slog.Int("rows", len(ids)), slog.Duration("after", wait))
	opts.phase(PhaseRecheckingHeartbeats, 0, 0)
	later, err := r.readHeartbeatsAfter(ctx, snap.Now, readAt, wait)
	clock.done(TimeSecondRead)
	if ctx.Err() != nil {
		return nil, "", inStep("waiting to read Pulp's worker heartbeats again from", SystemDatabase, ctx.Err())
	}
	if err != nil {
		note = fmt.Sprintf("the heartbeats could not be read again a period after the snapshot (%v): %d rows that look dead are held this pass", err, len(ids))
		r.log.Warn("second heartbeat read failed", slog.String("error", err.Error()), slog.Int("held", len(ids)))
		return m.Merge(heartbeat.UnsettledMotion(ids)), note, nil
	}
	r.recent.add(later)
	return m.Merge(heartbeat.Settle(current, later, ids, grace, r.cfg.HeartbeatRecheck)), "", nil
}

// secondReadTries bounds the reads readHeartbeatsAfter makes when the
// database's clock says one came too soon.
const secondReadTries = 3

// readHeartbeatsAfter reads the heartbeats once the database's clock is at
// least wait past first, the snapshot's now. It sleeps on this process's
// clock from readAt, when the snapshot's read began, a little past the
// wait; a snapshot whose transaction began late (a slow connection, a
// loaded machine) can still make that too soon on the database's clock,
// so a read that came too soon is made again after what is missing.
func (r *Reaper) readHeartbeatsAfter(ctx context.Context, first, readAt time.Time, wait time.Duration) (heartbeat.Reading, error) {
	const past = 100 * time.Millisecond
	until := readAt.Add(wait + past)
	var later heartbeat.Reading
	for range secondReadTries {
		if !ctxwait.Sleep(ctx, time.Until(until)) {
			return heartbeat.Reading{}, ctx.Err()
		}
		var err error
		if later, err = pulpdb.ReadHeartbeats(ctx, r.pool, r.cfg.DatabaseTimeout); err != nil {
			return heartbeat.Reading{}, err
		}
		missing := wait - later.Now.Sub(first)
		if missing <= 0 {
			break
		}
		until = time.Now().Add(missing + past)
	}
	return later, nil
}

func anyUnsettled(m *heartbeat.Motion) bool {
	for _, id := range m.Rows() {
		if rm, _ := m.Of(id); rm.Settlement == heartbeat.Unsettled {
			return true
		}
	}
	return false
}

// aheadNote says which rows' heartbeats are ahead of the database's clock,
// "" when none is: pulpcore stamps last_heartbeat with the worker's own
// clock, so a worker whose clock runs ahead by some minutes is judged alive
// those minutes longer after it dies, and its locks wait that much longer.
func aheadNote(rows []heartbeat.AppStatus, now time.Time, grace time.Duration) string {
	ahead := heartbeat.NewFleet(rows, now, grace).RowsAhead()
	if len(ahead) == 0 {
		return ""
	}
	worst := ahead[0]
	for _, r := range ahead[1:] {
		if r.LastHeartbeat.After(worst.LastHeartbeat) {
			worst = r
		}
	}
	return fmt.Sprintf("%d process rows have a heartbeat ahead of the database's clock, %s (%s) by %s: a process whose clock runs ahead is judged alive that much longer after it dies. To fix: synchronise the clocks of Pulp's hosts (NTP); lock-reaper doctor names every such row",
		len(ahead), worst.Name, worst.AppType, humantext.Setting(worst.LastHeartbeat.Sub(now).Round(time.Second)))
}

// WorkerTypeFix says where the worker type is set, for doctor and audit alike.
const WorkerTypeFix = `if Pulp should run the Redis worker, set WORKER_TYPE = "redis" in Pulp's settings ` +
	`(PULP_WORKER_TYPE=redis in every Pulp process's environment, API servers included, as they dispatch the tasks; ` +
	`with pulp-operator: a key WORKER_TYPE with the value "redis", quotes included, in the ConfigMap that the Pulp CR's ` +
	`spec.custom_pulp_settings names, and spec.cache.enabled: true, since the Redis worker needs REDIS_HOST); ` +
	`if Pulp runs pulpcore's own worker, lock-reaper has nothing to do.`

// WorkerTypeNote says, when Pulp's workers heartbeat but Redis holds no
// trace of the Redis worker (no task or resource lock, no owner in
// pulp:active_owners), that Pulp most likely runs pulpcore's default worker:
// WORKER_TYPE defaults to "pulpcore" (pulpcore/app/settings.py), whose
// locks are PostgreSQL advisory locks that lock-reaper neither reads nor
// needs to release, and pulp-operator sets no WORKER_TYPE of its own. A
// Redis worker adds itself to pulp:active_owners at its first lock and
// stays there until it is cleaned up after its death, so an empty set beside
// live workers means none of them ever took a Redis lock. "" when there is
// nothing to say.
func WorkerTypeNote(holdings, activeOwners int, rows []heartbeat.AppStatus, now time.Time) string {
	if holdings > 0 || activeOwners > 0 {
		return ""
	}
	workers := 0
	for _, r := range rows {
		if r.AppType == "worker" && r.Liveness(now, 0) >= heartbeat.Late {
			workers++
		}
	}
	if workers == 0 {
		return ""
	}
	return fmt.Sprintf("%d Pulp workers heartbeat in core_appstatus, but Redis holds no Redis-worker lock and %s lists no owner: "+
		"Pulp most likely runs pulpcore's default worker (WORKER_TYPE \"pulpcore\", PostgreSQL advisory locks), "+
		"which lock-reaper does not watch; unless no task has run since the workers started, it finds nothing to do",
		workers, redislocks.ActiveOwnersKey)
}
