package reaper

import (
	"context"

	"github.com/lock-reaper/lock-reaper/reaper/judge"
)

// Hooks into the pass for its external tests (package pass_test).

// ErrNoSnapshot is the error a pass without a database snapshot wraps.
var ErrNoSnapshot = errNoSnapshot

// ReadSnapshot reads a pass's snapshot as opts ask, without judging it.
func (r *Reaper) ReadSnapshot(ctx context.Context, opts PassOptions) (judge.Snapshot, error) {
	return r.snapshot(ctx, opts, &Report{})
}

// Act acts on plan, judged of snap, as a pass that writes does, and returns
// the results of its holdings and of its tasks.
func (r *Reaper) Act(ctx context.Context, snap judge.Snapshot, plan *judge.Plan) (holdings, tasks []Result, err error) {
	a := &actor{r: r, plan: plan, holdings: snap.Holdings}
	err = a.run(ctx)
	return a.holdingResults, a.taskResults, err
}
