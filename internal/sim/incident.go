package sim

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/lock-reaper/lock-reaper/internal/ctxwait"
)

// IncidentSpec describes a state like the one of 2026-07-24: one dead worker
// holding many locks, beside healthy workers and queued tasks. Counts are
// taken as given (zero means none); names, ages and the TTL have defaults.
type IncidentSpec struct {
	// DeadOwner is the dead worker's name ["1@pulp-worker-incident-0"].
	DeadOwner string
	// DeadTaskLocks is how many task locks the dead worker holds.
	DeadTaskLocks int
	// DeadResourceLocks is how many resource-lock holdings it has: its
	// membership in the domain's shared set plus DeadResourceLocks-1
	// exclusive repository locks, spread over its tasks. Needs
	// DeadTaskLocks > 0 when positive.
	DeadResourceLocks int
	// DeadRunning of the dead task locks belong to tasks still running under
	// the dead worker's row (a reaper cancels them).
	DeadRunning int
	// DeadClaimed belong to waiting tasks claimed by the dead row (a reaper
	// requeues them).
	DeadClaimed int
	// DeadUnclaimed belong to waiting, unclaimed tasks: it died between
	// acquire and claim (a reaper releases, the tasks stay queued).
	DeadUnclaimed int
	// DeadMissing belong to tasks that have no row.
	DeadMissing int
	// The remaining dead task locks belong to tasks completed long ago whose
	// locks leaked (paths 2-4); their rows must stay untouched.

	// LegacyFraction of the dead task locks, with their exclusive locks, are
	// legacy: written without registry entries, so only a SCAN finds them.
	// Completed tasks are made legacy first.
	LegacyFraction float64
	// DeadHeartbeatAge is how long ago the dead worker last beat [23h].
	DeadHeartbeatAge time.Duration
	// Successor adds a live row with the dead worker's name: it restarted
	// under the same pid@hostname, so the name is alive but its old tasks are
	// lost.
	Successor bool
	// LiveWorkers each run one healthy task holding its repository
	// exclusively and the domain shared.
	LiveWorkers int
	// LiveTasksPerWorker, when above one, gives each live worker that many
	// healthy running tasks instead of one, each with a repository of its
	// own (the benchmark's incident among a busy fleet).
	LiveTasksPerWorker int
	// UnrelatedKeys are keys outside the locks, like a shared cache's
	// (pulp:cache:…), that a keyspace SCAN must wade through.
	UnrelatedKeys int
	// QueuedTasks are waiting and unclaimed; every other one needs one of the
	// dead worker's repositories, so it can only run once that is reaped.
	QueuedTasks int
	// QueuedDomainExclusive queued tasks reserve the whole domain exclusively,
	// blocked by every member of the domain's set, dead or alive.
	QueuedDomainExclusive int
	// TTL of every worker row [DefaultWorkerTTL].
	TTL time.Duration
	// DomainID of every task [DefaultDomainID].
	DomainID string
	// BatchSize of the Redis pipeline [DefaultBatchSize].
	BatchSize int
}

// DefaultDeadOwner names the dead worker of an incident.
const DefaultDeadOwner = "1@pulp-worker-incident-0"

// DefaultDeadHeartbeatAge is how long the incident's worker had been dead.
const DefaultDeadHeartbeatAge = 23 * time.Hour

// IncidentOf20260724 is the incident as reported: one dead worker with 543
// task locks and 524 resource locks, healthy workers beside it, a queue.
func IncidentOf20260724() IncidentSpec {
	return IncidentSpec{
		DeadTaskLocks:         543,
		DeadResourceLocks:     524,
		DeadRunning:           1,
		DeadClaimed:           1,
		LegacyFraction:        0.1,
		LiveWorkers:           4,
		QueuedTasks:           200,
		QueuedDomainExclusive: 1,
	}
}

// DemoIncident is the incident `lock-reaper demo` builds: the one of
// 2026-07-24 with more of the dead worker's tasks still running (12) and
// claimed (6), so that the demo shows tasks canceled and requeued.
func DemoIncident() IncidentSpec {
	spec := IncidentOf20260724()
	spec.DeadRunning, spec.DeadClaimed = 12, 6
	return spec
}

// SmallIncident is the demo's incident, smaller, for tests: one dead worker
// holding locks that half the queue needs (more holdings than a page of 20
// shows), live workers beside it.
func SmallIncident() IncidentSpec {
	spec := IncidentOf20260724()
	spec.DeadTaskLocks, spec.DeadResourceLocks, spec.QueuedTasks = 40, 30, 12
	spec.DeadRunning, spec.DeadClaimed = 2, 1
	return spec
}

func (s IncidentSpec) withDefaults() (IncidentSpec, error) {
	setDefault(&s.DeadOwner, DefaultDeadOwner)
	setDefault(&s.DeadHeartbeatAge, DefaultDeadHeartbeatAge)
	setDefault(&s.TTL, DefaultWorkerTTL)
	setDefault(&s.DomainID, DefaultDomainID)
	setDefault(&s.BatchSize, DefaultBatchSize)
	special := s.DeadRunning + s.DeadClaimed + s.DeadUnclaimed + s.DeadMissing
	switch {
	case s.DeadTaskLocks < 0 || s.DeadResourceLocks < 0 || s.DeadRunning < 0 || s.DeadClaimed < 0 ||
		s.DeadUnclaimed < 0 || s.DeadMissing < 0 || s.LiveWorkers < 0 || s.QueuedTasks < 0 || s.QueuedDomainExclusive < 0 ||
		s.LiveTasksPerWorker < 0 || s.UnrelatedKeys < 0:
		return s, errors.New("sim: IncidentSpec: negative count")
	case special > s.DeadTaskLocks:
		return s, fmt.Errorf("sim: IncidentSpec: DeadRunning+DeadClaimed+DeadUnclaimed+DeadMissing = %d exceeds DeadTaskLocks = %d", special, s.DeadTaskLocks)
	case s.DeadResourceLocks > 0 && s.DeadTaskLocks == 0:
		return s, errors.New("sim: IncidentSpec: DeadResourceLocks needs DeadTaskLocks > 0")
	case s.LegacyFraction < 0 || s.LegacyFraction > 1:
		return s, fmt.Errorf("sim: IncidentSpec.LegacyFraction: %v outside [0, 1]", s.LegacyFraction)
	case !isUUID(s.DomainID):
		return s, fmt.Errorf("sim: IncidentSpec.DomainID: %q is not a canonical lowercase UUID", s.DomainID)
	case s.TTL < 0 || s.DeadHeartbeatAge < 0:
		return s, errors.New("sim: IncidentSpec: negative duration")
	}
	return s, nil
}

// Incident is the manifest of a built incident: what a correct reaper must
// release, keep, cancel, requeue and leave alone.
type Incident struct {
	DeadOwner       string
	DeadAppStatusID string
	// SuccessorAppStatusID is the live row reusing DeadOwner, if any.
	SuccessorAppStatusID string
	LiveOwners           []string
	LiveAppStatusIDs     []string
	// DomainResource is the domain PRN every task shares.
	DomainResource string
	// Stale are every holding of the dead owner: all must be released.
	Stale []Holding
	// Healthy are the live workers' holdings: none may be released.
	Healthy []Holding
	// LegacyKeys are the stale keys that have no registry entry.
	LegacyKeys []string
	// Cancel are tasks running under the dead row: they must end canceled
	// (or failed, by configuration) with finished_at set.
	Cancel []string
	// Requeue are waiting tasks claimed by the dead row: they must end
	// waiting with app_lock_id NULL.
	Requeue []string
	// Unclaimed are waiting, unclaimed tasks whose locks the dead owner
	// took: their locks go, the rows stay as they are.
	Unclaimed []string
	// Finished are completed tasks whose locks leaked: rows stay as they are.
	Finished []string
	// Missing are task ids with a lock but no row.
	Missing []string
	// Running are the live workers' tasks: they must stay running.
	Running []string
	// Queued are waiting, unclaimed tasks without locks: they must stay
	// waiting and unclaimed (until some worker runs them).
	Queued []string

	ttl     time.Duration
	liveIDs []string
}

// BuildIncident writes an incident into an empty Redis database and a
// database with pulpcore's schema and returns its manifest. Ages are measured
// from the database clock. The live rows only look alive for TTL: run
// KeepAlive while the demo or test needs them alive.
func BuildIncident(ctx context.Context, rdb redis.UniversalClient, pool *pgxpool.Pool, spec IncidentSpec) (*Incident, error) {
	spec, err := spec.withDefaults()
	if err != nil {
		return nil, err
	}
	now, err := dbNow(ctx, pool)
	if err != nil {
		return nil, err
	}
	inc := &Incident{
		DeadOwner:       spec.DeadOwner,
		DeadAppStatusID: NewUUID(),
		DomainResource:  DomainPRN(spec.DomainID),
		ttl:             spec.TTL,
	}
	deadBeat := now.Add(-spec.DeadHeartbeatAge)
	apps := []appStatusRow{{id: inc.DeadAppStatusID, appType: AppTypeWorker, name: spec.DeadOwner, ttl: spec.TTL, lastHeartbeat: deadBeat}}
	if spec.Successor {
		inc.SuccessorAppStatusID = NewUUID()
		inc.liveIDs = append(inc.liveIDs, inc.SuccessorAppStatusID)
		apps = append(apps, appStatusRow{id: inc.SuccessorAppStatusID, appType: AppTypeWorker, name: spec.DeadOwner, ttl: spec.TTL, lastHeartbeat: now})
	}
	for i := range spec.LiveWorkers {
		id, name := NewUUID(), fmt.Sprintf("1@pulp-worker-incident-%d", i+1)
		inc.LiveOwners, inc.LiveAppStatusIDs = append(inc.LiveOwners, name), append(inc.LiveAppStatusIDs, id)
		inc.liveIDs = append(inc.liveIDs, id)
		apps = append(apps, appStatusRow{id: id, appType: AppTypeWorker, name: name, ttl: spec.TTL, lastHeartbeat: now})
	}
	if err := copyAppStatuses(ctx, pool, apps); err != nil {
		return nil, err
	}

	locks := newLockWriter(rdb, spec.BatchSize)
	deadRepos, deadRows, err := inc.buildDead(ctx, locks, spec, deadBeat)
	if err != nil {
		return nil, err
	}
	liveRows, err := inc.buildLive(ctx, locks, spec, now)
	if err != nil {
		return nil, err
	}
	if err := locks.flush(ctx); err != nil {
		return nil, err
	}
	if spec.UnrelatedKeys > 0 {
		noise := FleetSpec{UnrelatedKeys: spec.UnrelatedKeys, BatchSize: spec.BatchSize}
		if err := (&FleetManifest{}).buildNoise(ctx, rdb, noise); err != nil {
			return nil, err
		}
	}
	queued := inc.buildQueue(spec, deadRepos)
	// Dead tasks are oldest, queued ones newest, in pulp_created order.
	if err := copyTasks(ctx, pool, deadRows, deadBeat.Add(-time.Hour)); err != nil {
		return nil, err
	}
	if err := copyTasks(ctx, pool, liveRows, now.Add(-time.Minute)); err != nil {
		return nil, err
	}
	if err := copyTasks(ctx, pool, queued, now.Add(-30*time.Second)); err != nil {
		return nil, err
	}
	if err := copyRunningReports(ctx, pool, append(append([]string(nil), inc.Cancel...), inc.Running...)); err != nil {
		return nil, err
	}
	return inc, nil
}

// buildDead writes the dead owner's locks and returns its repositories and
// the rows of its tasks.
func (inc *Incident) buildDead(ctx context.Context, locks *lockWriter, spec IncidentSpec, deadBeat time.Time) ([]string, []taskRow, error) {
	n := spec.DeadTaskLocks
	repos := make([]string, max(spec.DeadResourceLocks-1, 0))
	perTask := make([][]string, n)
	for k := range repos {
		repos[k] = RepositoryPRN(NewUUID())
		perTask[k%n] = append(perTask[k%n], repos[k])
	}
	legacy := int(math.Round(spec.LegacyFraction * float64(n)))
	domain := DomainPRN(spec.DomainID)
	var rows []taskRow
	for i := range n {
		id := NewUUID()
		registered := i < n-legacy // the last tasks, the completed ones, are legacy
		// The domain membership is written once below, not per task: one
		// owner is one member of the set however many tasks it holds.
		hs, err := locks.hold(ctx, spec.DeadOwner, id, perTask[i], nil, registered)
		if err != nil {
			return nil, nil, err
		}
		inc.Stale = append(inc.Stale, hs...)
		if !registered {
			for _, h := range hs {
				inc.LegacyKeys = append(inc.LegacyKeys, h.Key)
			}
		}
		row := taskRow{id: id, name: "sim.sync", record: ReservedResources(perTask[i], []string{domain}), domainID: spec.DomainID}
		switch {
		case i < spec.DeadRunning:
			row.state, row.appLockID, row.startedAt = StateRunning, inc.DeadAppStatusID, deadBeat.Add(-time.Minute)
			inc.Cancel = append(inc.Cancel, id)
		case i < spec.DeadRunning+spec.DeadClaimed:
			row.state, row.appLockID = StateWaiting, inc.DeadAppStatusID
			inc.Requeue = append(inc.Requeue, id)
		case i < spec.DeadRunning+spec.DeadClaimed+spec.DeadUnclaimed:
			row.state = StateWaiting
			inc.Unclaimed = append(inc.Unclaimed, id)
		case i < spec.DeadRunning+spec.DeadClaimed+spec.DeadUnclaimed+spec.DeadMissing:
			inc.Missing = append(inc.Missing, id)
			continue
		default:
			started := deadBeat.Add(-time.Duration(n-i) * time.Minute)
			row.state, row.appLockID = StateCompleted, inc.DeadAppStatusID
			row.startedAt, row.finishedAt = started, started.Add(30*time.Second)
			inc.Finished = append(inc.Finished, id)
		}
		rows = append(rows, row)
	}
	if spec.DeadResourceLocks > 0 {
		h, err := locks.join(ctx, spec.DeadOwner, domain, legacy < n)
		if err != nil {
			return nil, nil, err
		}
		inc.Stale = append(inc.Stale, h)
		if !h.Registered {
			inc.LegacyKeys = append(inc.LegacyKeys, h.Key)
		}
	}
	return repos, rows, nil
}

// buildLive writes the healthy running tasks of each live worker: one, or
// LiveTasksPerWorker.
func (inc *Incident) buildLive(ctx context.Context, locks *lockWriter, spec IncidentSpec, now time.Time) ([]taskRow, error) {
	domain := DomainPRN(spec.DomainID)
	var rows []taskRow
	for k := range len(inc.LiveOwners) * max(spec.LiveTasksPerWorker, 1) {
		i := k % len(inc.LiveOwners)
		owner := inc.LiveOwners[i]
		id, repo := NewUUID(), RepositoryPRN(NewUUID())
		hs, err := locks.hold(ctx, owner, id, []string{repo}, []string{domain}, true)
		if err != nil {
			return nil, err
		}
		inc.Healthy = append(inc.Healthy, hs...)
		inc.Running = append(inc.Running, id)
		rows = append(rows, taskRow{
			id: id, name: "sim.sync", state: StateRunning, record: ReservedResources([]string{repo}, []string{domain}),
			domainID: spec.DomainID, appLockID: inc.LiveAppStatusIDs[i], startedAt: now.Add(-time.Minute),
		})
	}
	return rows, nil
}

// buildQueue makes the queued tasks: every other one needs a dead repository.
func (inc *Incident) buildQueue(spec IncidentSpec, deadRepos []string) []taskRow {
	domain := DomainPRN(spec.DomainID)
	var rows []taskRow
	for i := range spec.QueuedTasks + spec.QueuedDomainExclusive {
		row := taskRow{id: NewUUID(), state: StateWaiting, domainID: spec.DomainID}
		switch {
		case i >= spec.QueuedTasks:
			row.name, row.record = "sim.reclaim_space", []string{domain}
		case i%2 == 0 && len(deadRepos) > 0:
			row.name, row.record = "sim.sync", ReservedResources([]string{deadRepos[i/2%len(deadRepos)]}, []string{domain})
		default:
			row.name, row.record = "sim.sync", ReservedResources([]string{RepositoryPRN(NewUUID())}, []string{domain})
		}
		inc.Queued = append(inc.Queued, row.id)
		rows = append(rows, row)
	}
	return rows
}

// KeepAlive beats the incident's live rows (live workers and successor)
// every TTL/3 with the database clock until ctx ends, so they stay alive for
// as long as a demo or test runs. It returns nil when ctx ends.
func (inc *Incident) KeepAlive(ctx context.Context, pool *pgxpool.Pool) error {
	return keepAlive(ctx, pool, inc.liveIDs, inc.ttl)
}

// KeepAliveInBackground runs KeepAlive on its own goroutine until stop is
// called (or ctx ends); stop waits for it and returns its error.
func (inc *Incident) KeepAliveInBackground(ctx context.Context, pool *pgxpool.Pool) (stop func() error) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- inc.KeepAlive(ctx, pool) }()
	return func() error {
		cancel()
		return <-done
	}
}

func keepAlive(ctx context.Context, pool *pgxpool.Pool, ids []string, ttl time.Duration) error {
	if len(ids) == 0 {
		<-ctx.Done()
		return nil
	}
	for {
		if _, err := pool.Exec(ctx, `UPDATE core_appstatus SET last_heartbeat = now(), pulp_last_updated = now() WHERE pulp_id = ANY($1::uuid[])`, ids); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("beat live rows: %w", err)
		}
		if !ctxwait.Sleep(ctx, ttl/3) {
			return nil
		}
	}
}
