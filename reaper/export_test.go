package reaper

import (
	"context"

	"github.com/lock-reaper/lock-reaper/reaper/judge"
)

// Hooks into the pass for its external tests (package reaper_test).

// RunOnceAdjusted runs one pass as RunOnce does, with adjust called on the
// plan before it is acted on: the tests step in between judging and acting.
func (r *Reaper) RunOnceAdjusted(ctx context.Context, opts Options, adjust func(*judge.Plan)) (*Report, error) {
	return r.run(ctx, opts, adjust)
}

// ErrNoSnapshot is the error a pass without a database snapshot wraps.
var ErrNoSnapshot = errNoSnapshot

// ReadSnapshot reads a pass's snapshot as opts ask, without judging it.
func (r *Reaper) ReadSnapshot(ctx context.Context, opts Options) (judge.Snapshot, error) {
	rd, err := r.read(ctx, opts, nil)
	return rd.snap, err
}

// Act acts on plan, judged of snap, as a pass that writes does, and returns
// the results of its holdings and of its tasks.
func (r *Reaper) Act(ctx context.Context, snap judge.Snapshot, plan *judge.Plan) (holdings, tasks []Result, err error) {
	a := &actor{r: r, plan: plan, holdings: snap.Holdings}
	err = a.run(ctx)
	return a.holdingResults, a.taskResults, err
}

// SetSignalCheckLimit changes how many tasks one pass checks the cancel
// signal of, so that a test sees the check go on over several passes.
func (r *Reaper) SetSignalCheckLimit(n int) { r.signalCheckLimit = n }
