package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/internal/ctxwait"
	"github.com/lock-reaper/lock-reaper/internal/sim"
)

// allFaultKinds are the faults every run must have seen before it goes quiet.
var allFaultKinds = []sim.FaultKind{
	sim.FaultLeakBeforeClaim, sim.FaultFinalNoRelease, sim.FaultCancelPathError, sim.FaultSupervisorError,
	sim.FaultCancelRace, sim.FaultImmediateRelease, sim.FaultKill, sim.FaultRestart,
	sim.FaultHeartbeatDelay, sim.FaultSlowDB,
}

const (
	// pollEvery is how often the phases look at the shared state.
	pollEvery = 100 * time.Millisecond
	// chaosOverrun bounds how long a run may take, past its tasks or soak
	// duration, to see every kind of fault.
	chaosOverrun = 2 * time.Minute
	// convergeSlack is what the convergence deadline allows beyond the
	// contract's bound, for a loaded CI machine running with -race.
	convergeSlack = time.Minute
	// drainTimeout bounds how long the workers may take to empty the queue
	// once the state converged.
	drainTimeout = 5 * time.Minute
	// cancelRunningEvery is how often the chaos cancels a running task.
	cancelRunningEvery = 200 * time.Millisecond
	// progressEvery is how often a soak logs where it is.
	progressEvery = 30 * time.Second
)

// chaos lets the fleet work with random faults beside the reapers until the
// scenario's tasks were created (or its soak duration passed) and every kind
// of fault happened. A safety failure ends it at once.
func (r *run) chaos() {
	t := r.t
	t.Helper()
	until := time.Now().Add(r.sc.soak)
	deadline := until.Add(chaosOverrun)
	if r.sc.soak == 0 {
		deadline = time.Now().Add(r.sc.maxChaos())
	}
	lastProgress, injected := time.Now(), false
	stopCanceling := r.cancelRunningTasks()
	defer stopCanceling()
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	for {
		st := r.fleet.Stats()
		if v := r.fleet.Violations(); len(v) > 0 {
			require.Empty(t, v, r.msg("safety violation during chaos"))
		}
		if u := r.rec.snapshot().unsafe; len(u) > 0 {
			require.Empty(t, u, r.msg("a pass released a holding that was being worked on"))
		}
		workDone := time.Now().After(until)
		if r.sc.soak == 0 {
			workDone = st.TasksCreated >= int64(r.sc.tasks)
		}
		missing := missingFaultKinds(st)
		if workDone && len(missing) == 0 {
			return
		}
		if workDone && !injected {
			// Rare kinds (a cancel hitting a running task) get one armed
			// fault each; the next chance to fail that way takes it.
			for _, k := range missing {
				r.fleet.Inject(k)
			}
			injected = true
		}
		if time.Since(lastProgress) >= progressEvery {
			lastProgress = time.Now()
			r.logProgress("chaos")
		}
		require.True(t, time.Now().Before(deadline), r.msg("chaos never saw faults %v; stats %+v", missing, st))
		select {
		case <-r.ctx.Done():
			t.Fatal(r.msg("test context ended during chaos"))
		case <-tick.C:
		}
	}
}

// cancelRunningTasks cancels a running task every cancelRunningEvery, as an
// operator stopping a sync would, until the returned function is called:
// the fleet's own random cancels mostly hit the waiting tasks of a long
// queue, and a cancel of a running task is leak path 3's only chance.
func (r *run) cancelRunningTasks() (stop func()) {
	ctx, cancel := context.WithCancel(r.ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctxwait.Sleep(ctx, cancelRunningEvery) {
			var id string
			err := r.pool.QueryRow(ctx, `SELECT pulp_id::text FROM core_task WHERE state = 'running' ORDER BY random() LIMIT 1`).Scan(&id)
			if err != nil {
				continue // no running task right now, or the run is ending
			}
			_ = r.fleet.Cancel(ctx, id) // a failed cancel is the fleet's to log
		}
	}()
	return func() {
		cancel()
		<-done
	}
}

// maxChaos bounds the chaos phase of a run that counts tasks.
func (sc scenario) maxChaos() time.Duration {
	return time.Duration(float64(sc.tasks)/sc.dispatchRate*float64(time.Second))*3 + chaosOverrun
}

func missingFaultKinds(st sim.Stats) []sim.FaultKind {
	var out []sim.FaultKind
	for _, k := range allFaultKinds {
		if st.Faults[k] == 0 {
			out = append(out, k)
		}
	}
	return out
}

// quiet kills one worker for good, as the last fault, then stops faults and
// dispatch. It returns when the run went quiet.
func (r *run) quiet() time.Time {
	t := r.t
	t.Helper()
	var live []string
	for _, p := range r.fleet.Processes() {
		if p.AppType == sim.AppTypeWorker && p.Alive {
			live = append(live, p.Name)
		}
	}
	slices.Sort(live)
	require.NotEmpty(t, live, r.msg("no live worker left"))
	victim := live[rand.New(rand.NewPCG(r.seed, 0xdead)).IntN(len(live))]
	require.NoError(t, r.fleet.Kill(victim), r.msg("kill %s", victim))
	require.NoError(t, r.fleet.SetFaultRates(sim.FaultRates{}))
	require.NoError(t, r.fleet.SetDispatch(sim.DispatchConfig{}))
	at := time.Now()
	r.rec.markQuiet(at)
	t.Logf("quiet after %v: killed %s for good; stats %+v", at.Sub(r.started).Round(time.Millisecond), victim, r.fleet.Stats())
	return at
}

// convergenceBound is the contract's promise for a run gone quiet: the last
// leak becomes releasable after the longest of ttl + grace (a kill),
// finished_grace (a final task) and confirm_after after the first pass that
// sees it (a live owner's leak); two more passes release it and update its
// task.
func convergenceBound() time.Duration {
	longest := max(workerTTL+heartbeatGrace, finishedGrace, confirmAfter+maxPassGap)
	return longest + 2*maxPassGap
}

// converge polls sim.CheckConverged until it finds nothing wrong, within the
// contract's bound plus some slack for a loaded machine.
func (r *run) converge(quietAt time.Time) time.Duration {
	t := r.t
	t.Helper()
	bound := convergenceBound()
	deadline := quietAt.Add(bound + convergeSlack)
	var problems []string
	for {
		var err error
		problems, err = sim.CheckConverged(r.ctx, r.rdb, r.pool)
		require.NoError(t, err)
		if len(problems) == 0 {
			took := time.Since(quietAt)
			t.Logf("converged %v after going quiet, %d passes later (contract bound %v)",
				took.Round(time.Millisecond), r.rec.snapshot().passesQuiet, bound)
			return took
		}
		if time.Now().After(deadline) {
			t.Fatal(r.msg("not converged %v after going quiet (bound %v): %d problems, first ones:\n%s",
				time.Since(quietAt).Round(time.Millisecond), bound, len(problems), firstLines(problems, 30)))
		}
		if !ctxwait.Sleep(r.ctx, pollEvery) {
			t.Fatal(r.msg("test context ended while converging"))
		}
	}
}

// drain waits until every task is final, no lock is left in Redis and no
// registry lists a key its owner does not hold.
func (r *run) drain() time.Duration {
	t := r.t
	t.Helper()
	start := time.Now()
	deadline := start.Add(drainTimeout)
	for {
		why, err := r.undrained()
		require.NoError(t, err)
		if why == "" {
			return time.Since(start)
		}
		if time.Now().After(deadline) {
			t.Fatal(r.msg("queue not drained after %v: %s", drainTimeout, why))
		}
		if !ctxwait.Sleep(r.ctx, pollEvery) {
			t.Fatal(r.msg("test context ended while draining"))
		}
	}
}

// undrained says what is left, or "".
func (r *run) undrained() (string, error) {
	states, err := sim.TaskStates(r.ctx, r.pool)
	if err != nil {
		return "", err
	}
	for s, n := range states {
		if !sim.FinalState(s) && n > 0 {
			return fmt.Sprintf("tasks by state %v", states), nil
		}
	}
	holdings, err := sim.ScanHoldings(r.ctx, r.rdb)
	if err != nil {
		return "", err
	}
	if len(holdings) > 0 {
		return fmt.Sprintf("%d holdings left with every task final, e.g. %+v", len(holdings), holdings[0]), nil
	}
	stale, err := sim.CheckRegistry(r.ctx, r.rdb)
	if err != nil {
		return "", err
	}
	if len(stale) > 0 {
		return fmt.Sprintf("%d registry entries without a holding:\n%s", len(stale), firstLines(stale, 10)), nil
	}
	return "", nil
}

// stop stops the reapers, so that no report arrives while the checks read
// them, then the fleet.
func (r *run) stop() {
	r.stopReapers()
	r.fleet.Stop()
}

func (r *run) logProgress(phase string) {
	st, rec := r.fleet.Stats(), r.rec.snapshot()
	faults := int64(0)
	for _, n := range st.Faults {
		faults += n
	}
	r.t.Logf("%s %v: tasks created %d, completed %d; faults %d (none yet: %v); passes %d; released %d; tasks updated %d; violations %d",
		phase, time.Since(r.started).Round(time.Second), st.TasksCreated, st.TasksCompleted, faults, missingFaultKinds(st),
		rec.passes, rec.summaryReleased, rec.summaryUpdated, st.Violations)
}

func firstLines(lines []string, n int) string {
	out := ""
	for i, l := range lines {
		if i == n {
			return out + fmt.Sprintf("... and %d more", len(lines)-n)
		}
		out += l + "\n"
	}
	return out
}
