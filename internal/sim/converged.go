package sim

import (
	"context"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
)

// CheckConverged lists what is wrong with the shared state if faults have
// stopped and a reaper has had its time ("within two passes plus
// confirm_after every task is final or running under a live worker, and no
// lock remains that is not held for an incomplete task by a live owner").
// An empty list means converged. It reads Redis first, then the database in
// one repeatable-read snapshot, judging liveness by the database clock
// (last_heartbeat >= now() - ttl; late counts as not alive).
//
// A task lock task:T held by O is fine when T is incomplete and claimed by an
// online row named O (or O is immediate-T). A resource holding of O is fine
// when a fine task lock of O reserves that resource with the same kind. An
// incomplete task is fine when it is waiting and unclaimed while some worker
// is online (queued, possibly behind healthy locks), or claimed by an online
// row that holds its task lock (claimed, running or canceling).
//
// Protocol steps of a running fleet pass through states this calls wrong for
// milliseconds (a lock acquired but not yet claimed, a task completed but not
// yet released), so poll it until it returns nothing rather than asserting
// one call.
func CheckConverged(ctx context.Context, rdb redis.UniversalClient, pool *pgxpool.Pool) ([]string, error) {
	holdings, err := ScanHoldings(ctx, rdb)
	if err != nil {
		return nil, err
	}
	var lockedTasks []string
	for _, h := range holdings {
		if id := h.TaskID(); id != "" && h.Kind == KindTask {
			lockedTasks = append(lockedTasks, id)
		}
	}
	snap, err := readSnapshot(ctx, pool, lockedTasks)
	if err != nil {
		return nil, err
	}
	return snap.problems(holdings), nil
}

type appRow struct {
	name    string
	appType string
	online  bool
}

type taskState struct {
	state   string
	appLock string
	record  []string
}

type snapshot struct {
	apps  map[string]appRow // by pulp_id
	alive map[string]bool   // owner names with an online row
	tasks map[string]taskState
	// workerOnline says some worker row is online, so queued tasks will move.
	workerOnline bool
}

func readSnapshot(ctx context.Context, pool *pgxpool.Pool, lockedTasks []string) (*snapshot, error) {
	s := &snapshot{apps: map[string]appRow{}, alive: map[string]bool{}, tasks: map[string]taskState{}}
	err := pgx.BeginTxFunc(ctx, pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT pulp_id::text, name, app_type, last_heartbeat >= now() - ttl FROM core_appstatus`)
		if err != nil {
			return fmt.Errorf("read app statuses: %w", err)
		}
		var id string
		var a appRow
		if _, err := pgx.ForEachRow(rows, []any{&id, &a.name, &a.appType, &a.online}, func() error {
			s.apps[id] = a
			if a.online {
				s.alive[a.name] = true
				s.workerOnline = s.workerOnline || a.appType == AppTypeWorker
			}
			return nil
		}); err != nil {
			return fmt.Errorf("read app statuses: %w", err)
		}
		rows, err = tx.Query(ctx, `SELECT pulp_id::text, state, coalesce(app_lock_id::text, ''), coalesce(reserved_resources_record, '{}')
FROM core_task WHERE state NOT IN ('completed', 'failed', 'canceled', 'skipped') OR pulp_id = ANY($1::uuid[])`, lockedTasks)
		if err != nil {
			return fmt.Errorf("read tasks: %w", err)
		}
		var t taskState
		_, err = pgx.ForEachRow(rows, []any{&id, &t.state, &t.appLock, &t.record}, func() error {
			s.tasks[id] = t
			return nil
		})
		if err != nil {
			return fmt.Errorf("read tasks: %w", err)
		}
		return nil
	})
	return s, err
}

func (s *snapshot) problems(holdings []Holding) []string {
	var out []string
	fine := map[string][]string{} // owner -> task ids whose task lock is fine
	lockOwner := map[string]string{}
	for _, h := range holdings {
		if h.Kind != KindTask {
			continue
		}
		id := h.TaskID()
		lockOwner[id] = h.Owner
		if p := s.taskLockProblem(id, h.Owner); p != "" {
			out = append(out, fmt.Sprintf("%s held by %s: %s", h.Key, h.Owner, p))
			continue
		}
		fine[h.Owner] = append(fine[h.Owner], id)
	}
	for _, h := range holdings {
		if h.Kind == KindTask || s.justified(h, fine[h.Owner]) {
			continue
		}
		out = append(out, fmt.Sprintf("%s %s holding of %s: no incomplete task of that owner reserves it", h.Key, h.Kind, h.Owner))
	}
	for id, t := range s.tasks {
		if FinalState(t.state) {
			continue
		}
		if p := s.taskProblem(id, t, lockOwner[id]); p != "" {
			out = append(out, fmt.Sprintf("task %s (%s): %s", id, t.state, p))
		}
	}
	slices.Sort(out)
	return out
}

func (s *snapshot) taskLockProblem(id, owner string) string {
	t, ok := s.tasks[id]
	switch {
	case !ok:
		return "no task row"
	case FinalState(t.state):
		return "task is " + t.state
	case owner == ImmediateOwner(id):
		return ""
	case !s.alive[owner]:
		return "owner is not alive"
	}
	app, claimed := s.apps[t.appLock]
	switch {
	case t.appLock == "":
		return "task is not claimed"
	case !claimed || app.name != owner:
		return "task is claimed by another process"
	case !app.online:
		return "task is claimed by a dead incarnation of the owner"
	}
	return ""
}

// justified reports whether one of the owner's fine task locks reserves the
// holding's resource with the holding's kind.
func (s *snapshot) justified(h Holding, tasks []string) bool {
	want := h.Resource()
	if h.Kind == KindShared {
		want = SharedPrefix + want
	}
	for _, id := range tasks {
		if slices.Contains(s.tasks[id].record, want) {
			return true
		}
	}
	return false
}

func (s *snapshot) taskProblem(id string, t taskState, lockOwner string) string {
	if t.appLock == "" {
		if t.state != StateWaiting {
			return "not claimed by any process"
		}
		if !s.workerOnline {
			return "queued but no worker is alive"
		}
		return ""
	}
	app, ok := s.apps[t.appLock]
	switch {
	case !ok:
		return "claimed by a process without a row"
	case !app.online:
		return fmt.Sprintf("claimed by %s, which is not alive", app.name)
	case lockOwner != app.name && lockOwner != ImmediateOwner(id):
		return fmt.Sprintf("claimed by %s, which holds no task lock for it", app.name)
	}
	return ""
}

// CheckRegistry lists owner-registry entries that do not match a holding:
// pulp:owner_locks:<O> naming a key O does not hold. Releases remove their
// entries, so after a reaper's pass none should remain.
func CheckRegistry(ctx context.Context, rdb redis.UniversalClient) ([]string, error) {
	holdings, err := ScanHoldings(ctx, rdb)
	if err != nil {
		return nil, err
	}
	held := map[holdingRef]bool{}
	for _, h := range holdings {
		held[holdingRef{h.Owner, h.Key}] = true
	}
	var out []string
	iter := rdb.Scan(ctx, 0, OwnerLocksPrefix+"*", scanCount).Iterator()
	for iter.Next(ctx) {
		reg := iter.Val()
		owner := reg[len(OwnerLocksPrefix):]
		keys, err := rdb.SMembers(ctx, reg).Result()
		if err != nil {
			return nil, fmt.Errorf("read registry %s: %w", reg, err)
		}
		for _, k := range keys {
			if !held[holdingRef{owner, k}] {
				out = append(out, fmt.Sprintf("%s lists %s, which %s does not hold", reg, k, owner))
			}
		}
	}
	if err := iter.Err(); err != nil {
		return nil, fmt.Errorf("scan registries: %w", err)
	}
	slices.Sort(out)
	return out, nil
}

// TaskStates counts the tasks of the database by state.
func TaskStates(ctx context.Context, pool *pgxpool.Pool) (map[string]int, error) {
	rows, err := pool.Query(ctx, `SELECT state, count(*) FROM core_task GROUP BY state`)
	if err != nil {
		return nil, fmt.Errorf("count tasks: %w", err)
	}
	out := map[string]int{}
	var state string
	var n int
	if _, err := pgx.ForEachRow(rows, []any{&state, &n}, func() error {
		out[state] = n
		return nil
	}); err != nil {
		return nil, fmt.Errorf("count tasks: %w", err)
	}
	return out, nil
}
