package sim

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// maxPerTick bounds the tasks one dispatcher tick creates, so a stalled
// dispatcher does not answer with a flood.
const maxPerTick = 10000

const dispatchTick = 10 * time.Millisecond

// Submit creates n waiting tasks with random reservations (see
// Config.Repositories and the fractions) in one COPY and returns their ids in
// creation order.
func (f *Fleet) Submit(ctx context.Context, n int) ([]string, error) {
	specs := make([]TaskSpec, n)
	for i := range specs {
		specs[i] = f.randomSpec()
	}
	return f.SubmitSpecs(ctx, specs...)
}

// SubmitSpecs creates one waiting, unclaimed task per spec, in order, and
// returns their ids.
func (f *Fleet) SubmitSpecs(ctx context.Context, specs ...TaskSpec) ([]string, error) {
	ids, err := insertTasksNeeding(ctx, f.pool, f.currentTaskVersions(), specs)
	f.counters.created.Add(int64(len(ids)))
	return ids, err
}

// randomSpec draws a task: usually exclusive on one repository (a sync),
// sometimes shared on it (a publish), rarely exclusive on the whole domain.
func (f *Fleet) randomSpec() TaskSpec {
	domain := DomainPRN(f.cfg.DomainID)
	u := f.rng.Float64()
	switch {
	case u < f.cfg.DomainExclusiveFraction || len(f.repos) == 0:
		return TaskSpec{Name: "sim.reclaim_space", Exclusive: []string{domain}, DomainID: f.cfg.DomainID}
	case u < f.cfg.DomainExclusiveFraction+f.cfg.SharedRepoFraction:
		repo := f.repos[f.rng.IntN(len(f.repos))]
		return TaskSpec{Name: "sim.publish", Shared: []string{repo}, DomainID: f.cfg.DomainID}
	default:
		repo := f.repos[f.rng.IntN(len(f.repos))]
		return TaskSpec{Name: "sim.sync", Exclusive: []string{repo}, DomainID: f.cfg.DomainID}
	}
}

// InsertTasks creates one waiting, unclaimed task per spec with one COPY, in
// order (pulp_created increases along specs), each reserving its domain's PRN
// shared unless it reserves the domain otherwise. It returns the task ids.
func InsertTasks(ctx context.Context, pool *pgxpool.Pool, specs ...TaskSpec) ([]string, error) {
	return insertTasksOn(ctx, pool, specs)
}

func insertTasksOn(ctx context.Context, pool copier, specs []TaskSpec) ([]string, error) {
	rows := make([]taskRow, len(specs))
	for i, s := range specs {
		s = s.withDomain()
		rows[i] = taskRow{id: NewUUID(), name: s.Name, state: StateWaiting, record: s.Record(), domainID: s.DomainID}
	}
	if err := copyTasks(ctx, pool, rows, time.Time{}); err != nil {
		return nil, err
	}
	ids := make([]string, len(rows))
	for i, r := range rows {
		ids[i] = r.id
	}
	return ids, nil
}

// dispatchLoop creates and cancels tasks at the configured rates.
func (f *Fleet) dispatchLoop(ctx context.Context) {
	tick := time.NewTicker(dispatchTick)
	defer tick.Stop()
	last := time.Now()
	var owedTasks, owedCancels float64
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			d := f.dispatch.Load()
			elapsed := now.Sub(last).Seconds()
			last = now
			owedTasks = min(owedTasks+d.Rate*elapsed, maxPerTick)
			owedCancels = min(owedCancels+d.CancelRate*elapsed, maxPerTick)
			n := int(owedTasks)
			owedTasks -= float64(n)
			f.dispatchTasks(ctx, n, d.ImmediateFraction)
			c := int(owedCancels)
			owedCancels -= float64(c)
			for range c {
				f.cancelRandom(ctx)
			}
		}
	}
}

func (f *Fleet) dispatchTasks(ctx context.Context, n int, immediateFraction float64) {
	var deferred []TaskSpec
	for range n {
		spec := f.randomSpec()
		if immediateFraction > 0 && f.rng.Float64() < immediateFraction {
			// Immediate tasks run in API processes, beside the dispatcher.
			f.spawn(func(ctx context.Context) {
				if _, _, err := f.RunImmediate(ctx, spec); err != nil {
					f.noteError(ctx, "dispatcher", "immediate task", err)
				}
			})
			continue
		}
		deferred = append(deferred, spec)
	}
	if len(deferred) == 0 {
		return
	}
	if _, err := f.SubmitSpecs(ctx, deferred...); err != nil {
		f.noteError(ctx, "dispatcher", "submit", err)
	}
}

func (f *Fleet) cancelRandom(ctx context.Context) {
	var id string
	err := f.pool.QueryRow(ctx, sqlRandomIncompleteTask).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return
	}
	if err == nil {
		err = f.Cancel(ctx, id)
	}
	if err != nil && !errors.Is(err, ErrNoAPI) {
		f.noteError(ctx, "dispatcher", "cancel", err)
	}
}
