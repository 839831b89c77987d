package doctor

import (
	"context"
	"fmt"
	"sync"

	"github.com/lock-reaper/lock-reaper/reaper"
	"github.com/lock-reaper/lock-reaper/reaper/redislocks"
)

// checkRedisWorker asks whether Pulp runs the Redis worker at all: pulpcore's
// default worker (WORKER_TYPE "pulpcore") takes PostgreSQL advisory locks,
// never Redis ones, and pulp-operator sets no WORKER_TYPE, so a default
// install gives lock-reaper nothing to find. It reads the snapshot the
// legacy-owners check reads, pulp:active_owners included.
func checkRedisWorker(ctx context.Context, t Target) Result {
	in, stop := inspected(ctx, t)
	if stop != nil {
		return *stop
	}
	return evalRedisWorker(in)
}

func evalRedisWorker(in *reaper.Inspection) Result {
	snap := in.Snapshot
	holdings, owners := len(snap.Holdings), in.ActiveOwners
	if note := reaper.WorkerTypeNote(holdings, owners, snap.AppStatuses, snap.Now); note != "" {
		return Result{Status: Warn, Evidence: note, Fix: reaper.WorkerTypeFix}
	}
	return Result{Status: OK, Evidence: fmt.Sprintf("%d holdings, %d owners in %s: Pulp's workers use the Redis worker's locks, or none is alive",
		holdings, owners, redislocks.ActiveOwnersKey)}
}

// inspectOnce reads one snapshot for every check that needs it.
func inspectOnce(inspect func(context.Context) (*reaper.Inspection, error)) func(context.Context) (*reaper.Inspection, error) {
	var (
		once sync.Once
		in   *reaper.Inspection
		err  error
	)
	return func(ctx context.Context) (*reaper.Inspection, error) {
		once.Do(func() { in, err = inspect(ctx) })
		return in, err
	}
}
