package sim

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
)

// FleetSpec describes a large static fleet for benchmarks. Counts are taken
// as given (zero means none) except those with a default in brackets.
type FleetSpec struct {
	// Owners is the number of worker rows [10].
	Owners int
	// DeadFraction of the owners have a heartbeat DeadHeartbeatAge old. Above
	// 0.5 (with 3 or more workers) the reaper's mass-death guard holds back.
	DeadFraction float64
	// TaskLocks are spread round-robin over the owners; each task reserves
	// ExclusivePerTask repositories of its own and its domain shared.
	TaskLocks int
	// ExclusivePerTask [1].
	ExclusivePerTask int
	// SharedDomains is how many domains the tasks are spread over; domains
	// beyond the default one get core_domain rows [1].
	SharedDomains int
	// FinishedFraction of the task locks (drawn at random) belong to tasks
	// completed long ago (leaked); the others run under their owner.
	FinishedFraction float64
	// LegacyFraction of the task locks (drawn at random, with their exclusive
	// locks) have no registry entries.
	LegacyFraction float64
	// Seed makes the random draws repeatable.
	Seed uint64
	// QueuedTasks are waiting, unclaimed, without locks.
	QueuedTasks int
	// UnrelatedKeys are keys outside the lock prefixes, like a shared
	// cache's, that a keyspace SCAN must wade through.
	UnrelatedKeys int
	// DecoyKeys are keys under the lock prefixes that are not Pulp locks (a
	// task key that is no UUID, a task key that is a hash, a resource key that
	// is a list); a reaper must leave them alone.
	DecoyKeys int
	// TTL of every row [DefaultWorkerTTL].
	TTL time.Duration
	// DeadHeartbeatAge [1h].
	DeadHeartbeatAge time.Duration
	// Hostname names the owners "<n>@<Hostname>-<i>" ["bench"].
	Hostname string
	// BatchSize is the number of Redis commands per round trip [DefaultBatchSize].
	BatchSize int
}

// FleetManifest summarises a built fleet by counts, since a benchmark fleet
// is too big to list.
type FleetManifest struct {
	Owners     []string
	DeadOwners []string
	// DomainIDs are the domains the tasks use.
	DomainIDs []string
	TaskLocks int
	// StaleTaskLocks are the task locks a correct reaper releases: all of
	// dead owners, and those of finished tasks.
	StaleTaskLocks int
	// StaleHoldings and HealthyHoldings count every holding (task, exclusive,
	// shared) a correct reaper releases or must keep.
	StaleHoldings   int
	HealthyHoldings int
	// LegacyTaskLocks have no registry entries.
	LegacyTaskLocks int
	// LostTasks run under dead owners: a reaper cancels them.
	LostTasks   int
	QueuedTasks int
	// DecoyKeys lists the keys that look like locks but are not.
	DecoyKeys     []string
	UnrelatedKeys int

	liveIDs []string
	ttl     time.Duration
}

// KeepAlive beats the live owners' rows every TTL/3 until ctx ends.
func (m *FleetManifest) KeepAlive(ctx context.Context, pool *pgxpool.Pool) error {
	return keepAlive(ctx, pool, m.liveIDs, m.ttl)
}

func (s FleetSpec) withDefaults() (FleetSpec, error) {
	setDefault(&s.Owners, 10)
	setDefault(&s.ExclusivePerTask, 1)
	setDefault(&s.SharedDomains, 1)
	setDefault(&s.TTL, DefaultWorkerTTL)
	setDefault(&s.DeadHeartbeatAge, time.Hour)
	setDefault(&s.Hostname, "bench")
	setDefault(&s.BatchSize, DefaultBatchSize)
	for _, f := range []float64{s.DeadFraction, s.FinishedFraction, s.LegacyFraction} {
		if f < 0 || f > 1 {
			return s, fmt.Errorf("sim: FleetSpec: fraction %v outside [0, 1]", f)
		}
	}
	if s.Owners < 0 || s.TaskLocks < 0 || s.ExclusivePerTask < 0 || s.SharedDomains < 0 ||
		s.QueuedTasks < 0 || s.UnrelatedKeys < 0 || s.DecoyKeys < 0 {
		return s, errors.New("sim: FleetSpec: negative count")
	}
	return s, nil
}

// spread reports whether item i of a sequence is among the fraction f of
// items picked evenly along it: exact counts, for the owners.
func spread(i int, f float64) bool {
	return int(float64(i+1)*f) > int(float64(i)*f)
}

// chance reports whether task i has a property of probability f, drawn from
// a hash of (seed, salt, i): the same answer every time it is asked, for the
// Redis and the database side, and uncorrelated with the owner (i mod
// Owners) and with other properties.
func chance(seed uint64, salt uint64, i int, f float64) bool {
	x := seed ^ salt*0x9e3779b97f4a7c15 ^ uint64(i)*0xbf58476d1ce4e5b9
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return float64(x>>11)/(1<<53) < f
}

// idSpace makes distinct version 4 UUIDs from a random prefix and an index,
// so a million ids need no memory and come out the same in Redis and in COPY.
type idSpace [8]byte

func newIDSpace() idSpace {
	var s idSpace
	_, _ = rand.Read(s[:])
	return s
}

func (s idSpace) id(i int) string {
	var b [16]byte
	copy(b[:8], s[:])
	binary.BigEndian.PutUint64(b[8:], uint64(i)) // the variant bits only touch bit 62-63
	return formatUUID(b)
}

// BuildFleet writes a large static fleet for benchmarks: rows, tasks and
// locks, pipelined in batches and copied with COPY. It returns counts of
// what a correct reaper does with it.
func BuildFleet(ctx context.Context, rdb redis.UniversalClient, pool *pgxpool.Pool, spec FleetSpec) (*FleetManifest, error) {
	spec, err := spec.withDefaults()
	if err != nil {
		return nil, err
	}
	now, err := dbNow(ctx, pool)
	if err != nil {
		return nil, err
	}
	m := &FleetManifest{TaskLocks: spec.TaskLocks, QueuedTasks: spec.QueuedTasks, UnrelatedKeys: spec.UnrelatedKeys, ttl: spec.TTL}

	if err := m.buildDomains(ctx, pool, spec); err != nil {
		return nil, err
	}
	rows := make([]appStatusRow, spec.Owners)
	dead := make([]bool, spec.Owners)
	for i := range rows {
		dead[i] = spread(i, spec.DeadFraction)
		rows[i] = appStatusRow{id: NewUUID(), appType: AppTypeWorker, name: fmt.Sprintf("%d@%s-%d", 1+i%997, spec.Hostname, i), ttl: spec.TTL, lastHeartbeat: now}
		m.Owners = append(m.Owners, rows[i].name)
		if dead[i] {
			rows[i].lastHeartbeat = now.Add(-spec.DeadHeartbeatAge)
			m.DeadOwners = append(m.DeadOwners, rows[i].name)
		} else {
			m.liveIDs = append(m.liveIDs, rows[i].id)
		}
	}
	if err := copyAppStatuses(ctx, pool, rows); err != nil {
		return nil, err
	}

	tasks, repos := newIDSpace(), newIDSpace()
	task := func(i int) (owner int, domain string, exclusive []string, finished bool) {
		owner = i % max(spec.Owners, 1)
		domain = m.DomainIDs[i%len(m.DomainIDs)]
		for k := range spec.ExclusivePerTask {
			exclusive = append(exclusive, RepositoryPRN(repos.id(i*spec.ExclusivePerTask+k)))
		}
		return owner, domain, exclusive, chance(spec.Seed, 1, i, spec.FinishedFraction)
	}
	if spec.TaskLocks > 0 && spec.Owners == 0 {
		return nil, errors.New("sim: FleetSpec: TaskLocks need Owners")
	}
	if err := m.buildLocks(ctx, rdb, spec, rows, dead, tasks, task); err != nil {
		return nil, err
	}
	if err := copyTaskFunc(ctx, pool, spec.TaskLocks, func(i int) taskRow {
		owner, domain, exclusive, finished := task(i)
		r := taskRow{id: tasks.id(i), name: "sim.sync", state: StateRunning, domainID: domain,
			record: ReservedResources(exclusive, []string{DomainPRN(domain)}), appLockID: rows[owner].id,
			startedAt: now.Add(-time.Hour)}
		if finished {
			r.state, r.finishedAt = StateCompleted, now.Add(-30*time.Minute)
		}
		return r
	}, now.Add(-2*time.Hour)); err != nil {
		return nil, err
	}
	queued := newIDSpace()
	if err := copyTaskFunc(ctx, pool, spec.QueuedTasks, func(i int) taskRow {
		domain := m.DomainIDs[i%len(m.DomainIDs)]
		return taskRow{id: queued.id(i), name: "sim.sync", state: StateWaiting, domainID: domain,
			record: ReservedResources([]string{RepositoryPRN(NewUUID())}, []string{DomainPRN(domain)})}
	}, now.Add(-time.Minute)); err != nil {
		return nil, err
	}
	if err := m.buildNoise(ctx, rdb, spec); err != nil {
		return nil, err
	}
	return m, nil
}

// buildDomains makes the domains beyond the default one.
func (m *FleetManifest) buildDomains(ctx context.Context, pool *pgxpool.Pool, spec FleetSpec) error {
	m.DomainIDs = []string{DefaultDomainID}
	var extra [][]any
	for i := 1; i < spec.SharedDomains; i++ {
		id := NewUUID()
		m.DomainIDs = append(m.DomainIDs, id)
		u, err := pgUUID(id)
		if err != nil {
			return err
		}
		extra = append(extra, []any{u, fmt.Sprintf("sim-%s", id[:8]+id[9:13]+id[14:18])})
	}
	if len(extra) == 0 {
		return nil
	}
	if _, err := pool.CopyFrom(ctx, pgx.Identifier{"core_domain"}, []string{"pulp_id", "name"}, pgx.CopyFromRows(extra)); err != nil {
		return fmt.Errorf("copy %d domains: %w", len(extra), err)
	}
	return nil
}

// buildLocks writes every task's locks and each owner's domain memberships,
// counting which holdings are stale.
func (m *FleetManifest) buildLocks(ctx context.Context, rdb redis.UniversalClient, spec FleetSpec, rows []appStatusRow, dead []bool,
	tasks idSpace, task func(int) (int, string, []string, bool)) error {
	locks := newLockWriter(rdb, spec.BatchSize)
	type membership struct {
		owner  int
		domain string
	}
	members := map[membership]bool{} // value: some running task justifies it
	for i := range spec.TaskLocks {
		owner, domain, exclusive, finished := task(i)
		legacy := chance(spec.Seed, 2, i, spec.LegacyFraction)
		if legacy {
			m.LegacyTaskLocks++
		}
		if _, err := locks.hold(ctx, rows[owner].name, tasks.id(i), exclusive, nil, !legacy); err != nil {
			return err
		}
		n := 1 + len(exclusive)
		stale := dead[owner] || finished
		if stale {
			m.StaleTaskLocks++
			m.StaleHoldings += n
		} else {
			m.HealthyHoldings += n
		}
		if !finished && dead[owner] {
			m.LostTasks++
		}
		k := membership{owner, domain}
		members[k] = members[k] || !stale
	}
	for k, justified := range members {
		if _, err := locks.join(ctx, rows[k.owner].name, DomainPRN(k.domain), true); err != nil {
			return err
		}
		if justified {
			m.HealthyHoldings++
		} else {
			m.StaleHoldings++
		}
	}
	return locks.flush(ctx)
}

// unrelatedPerCommand is how many keys one MSET of filler writes.
const unrelatedPerCommand = 1000

// buildNoise writes the unrelated keys and the decoys.
func (m *FleetManifest) buildNoise(ctx context.Context, rdb redis.UniversalClient, spec FleetSpec) error {
	w := newPipeWriter(rdb, spec.BatchSize)
	prefix := NewUUID()[:8]
	for start := 0; start < spec.UnrelatedKeys; start += unrelatedPerCommand {
		end := min(start+unrelatedPerCommand, spec.UnrelatedKeys)
		pairs := make([]any, 0, 2*(end-start))
		for i := start; i < end; i++ {
			pairs = append(pairs, fmt.Sprintf("pulp:cache:%s:%d", prefix, i), "cached")
		}
		if err := w.add(ctx, end-start, func(p redis.Pipeliner) { p.MSet(ctx, pairs...) }); err != nil {
			return err
		}
	}
	for i := range spec.DecoyKeys {
		var key string
		switch i % 3 {
		case 0:
			key = fmt.Sprintf("%scache-%s-%d", TaskKeyPrefix, prefix, i)
			err := w.add(ctx, 1, func(p redis.Pipeliner) { p.Set(ctx, key, "not a lock", 0) })
			if err != nil {
				return err
			}
		case 1:
			key = TaskKey(NewUUID())
			if err := w.add(ctx, 1, func(p redis.Pipeliner) { p.HSet(ctx, key, "field", "not a lock") }); err != nil {
				return err
			}
		default:
			key = ResourceKey(fmt.Sprintf("decoy-%s-%d", prefix, i))
			if err := w.add(ctx, 1, func(p redis.Pipeliner) { p.RPush(ctx, key, "not a lock") }); err != nil {
				return err
			}
		}
		m.DecoyKeys = append(m.DecoyKeys, key)
	}
	return w.flush(ctx)
}
