package e2e

import (
	"fmt"
	"maps"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/internal/sim"
)

// logFigures logs what the run did, in the form SOAK.md records.
func (r *run) logFigures(rec recorded, convergedAfter, drainedAfter time.Duration) {
	t := r.t
	t.Helper()
	st := r.fleet.Stats()
	states, err := sim.TaskStates(r.ctx, r.pool)
	require.NoError(t, err)
	reaped, err := r.reapedTasks()
	require.NoError(t, err)
	requeues := 0
	for _, tf := range rec.updated {
		if tf.ClearClaim {
			requeues++
		}
	}
	host, _ := os.Hostname()
	var b strings.Builder
	line := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	line("figures of %s", t.Name())
	line("  seed:                 %d", r.seed)
	line("  machine:              %s, %s/%s, %d CPUs, %s", host, runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version())
	line("  run time:             %v (converged %v after going quiet, drained %v later)",
		time.Since(r.started).Round(time.Second), convergedAfter.Round(time.Millisecond), drainedAfter.Round(time.Millisecond))
	line("  workers / APIs:       %d / 2", r.sc.workers)
	line("  tasks created:        %d", st.TasksCreated)
	line("  tasks by final state: %s", formatCounts(states))
	line("  fleet counts:         completed %d, canceled %d, failed %d, immediate run %d, immediate deferred %d, acquired %d, blocked %d, claims lost %d, released %d, heartbeats %d, checks %d, excused %d, errors %d",
		st.TasksCompleted, st.TasksCanceled, st.TasksFailed, st.ImmediateRun, st.ImmediateDeferred, st.Acquired,
		st.AcquireBlocked, st.ClaimsLost, st.Released, st.Heartbeats, st.Checks, st.Excused, st.Errors)
	faults := map[string]int{}
	for k, n := range st.Faults {
		faults[k.String()] = int(n)
	}
	line("  faults by kind:       %s", formatCounts(faults))
	line("  passes:               %d (%d skipped: another pass held the lock; %d failed; %d after going quiet)",
		rec.passes, rec.skipped, len(rec.failures), rec.passesQuiet)
	line("  holdings released:    %d (wire: %d), by verdict %s", rec.summaryReleased, sumCounts(rec.released), formatCounts(rec.releasedByVerdict))
	rels := r.fleet.SelfReleases()
	took := 0
	for _, rel := range rels {
		took += len(rel.Keys)
	}
	line("  fleet's own releases: %d holdings of other owners, by %d cancels of waiting tasks", took, len(rels))
	line("  findings by result:   %s", formatCounts(rec.results))
	line("  tasks updated:        %d (%d finished, %d requeued); in the database with the reaper's reason: %d",
		rec.summaryUpdated, rec.summaryUpdated-requeues, requeues, len(reaped))
	line("  guards:               %s", formatCounts(rec.guards))
	line("  violations:           %d fleet, %d cross-check", len(r.fleet.Violations()), len(rec.unsafe))
	t.Log(b.String())
}

func formatCounts[K comparable, V int | int64](m map[K]V) string {
	if len(m) == 0 {
		return "none"
	}
	keys := slices.SortedFunc(maps.Keys(m), func(a, b K) int { return strings.Compare(fmt.Sprint(a), fmt.Sprint(b)) })
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%v %d", k, m[k])
	}
	return strings.Join(parts, ", ")
}

func sumCounts[K comparable](m map[K]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}
