package e2e

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/lock-reaper/lock-reaper/internal/sim"
	"github.com/lock-reaper/lock-reaper/reaper"
)

// reaperReasonMark is in the error reason of every task the reaper finished
// ("Worker <name> has gone missing; lock reaper canceled.").
const reaperReasonMark = "lock reaper"

// safetyProblems: no live process lost a holding it was working with, no
// pass released a holding that was being worked on, every pass completed,
// and the simulated processes met no unexpected error.
func (r *run) safetyProblems(rec recorded) []string {
	var out []string
	for _, v := range r.fleet.Violations() {
		out = append(out, "fleet violation: "+v.String())
	}
	for _, u := range rec.unsafe {
		out = append(out, "unsafe release: "+u)
	}
	for _, f := range rec.failures {
		out = append(out, "failed pass: "+f)
	}
	if n := r.fleet.Stats().Errors; n > 0 {
		out = append(out, fmt.Sprintf("the simulated processes hit %d unexpected errors (see the log)", n))
	}
	return out
}

// holdingAccountingProblems: the releases the reports claim are exactly
// those Redis answered "released" to, and every holding a fault leaked was
// released by the reaper, unless the fleet itself took it: an API process's
// cancel of the waiting task releases its locks under whoever holds its task
// key (sim.Fleet.SelfReleases lists what each such release took), and such
// a cancel may win the race of a cancel-race fault, or hit the task of a
// leak before the claim or of a worker killed before or after its claim
// (once the reaper requeued it).
//
// Only task locks and exclusive resource locks are followed from leak to
// release: a shared membership of a leaked task is the same set member as
// that of the owner's next task on the same resource, so the owner's own
// release of that task may remove it, and nobody can tell which task a
// removed member belonged to.
func (r *run) holdingAccountingProblems(rec recorded) ([]string, error) {
	var out []string
	wire, wireResults, malformed := r.wire.snapshot()
	for _, m := range malformed {
		out = append(out, "release script call the accounting could not read: "+m)
	}
	for _, ref := range slices.SortedFunc(maps.Keys(unionKeys(wire, rec.released)), compareRefs) {
		if w, rp := wire[ref], rec.released[ref]; w != rp {
			out = append(out, fmt.Sprintf("%s: released %d times on the wire, %d times in the reports", ref, w, rp))
		}
	}
	if w := wireResults[string(reaper.ResultReleased)]; w != rec.summaryReleased {
		out = append(out, fmt.Sprintf("the reports' summaries count %d released holdings, the wire %d", rec.summaryReleased, w))
	}
	if len(rec.updated) != rec.summaryUpdated {
		out = append(out, fmt.Sprintf("the reports' summaries count %d updated tasks, their task findings %d", rec.summaryUpdated, len(rec.updated)))
	}

	leaks := leakEvents(r.fleet.Faults())
	var ids []string
	for _, ev := range leaks {
		ids = append(ids, ev.Task)
	}
	rows, err := r.taskRows(ids)
	if err != nil {
		return nil, err
	}
	byFleet := fleetReleases(r.fleet.SelfReleases())
	var tookByFleet []string
	need := map[holdingRef]int{}
	leakedBy := map[holdingRef][]string{}
	for _, ev := range leaks {
		record, ok := rows[ev.Task]
		if !ok {
			out = append(out, fmt.Sprintf("task %s of fault %s has no row", ev.Task, ev.Kind))
			continue
		}
		exclusive, _ := sim.SplitReserved(record)
		keys := []string{sim.TaskKey(ev.Task)}
		for _, res := range exclusive {
			keys = append(keys, sim.ResourceKey(res))
		}
		for _, k := range keys {
			ref := holdingRef{Key: k, Owner: ev.Process}
			if th := (taskHolding{task: ev.Task, ref: ref}); byFleet[th] > 0 {
				byFleet[th]-- // the fleet's own cancel of the task took it
				tookByFleet = append(tookByFleet, fmt.Sprintf("%s (%s %s)", ref, ev.Kind, ev.Detail))
				continue
			}
			need[ref]++
			leakedBy[ref] = append(leakedBy[ref], fmt.Sprintf("%s %s", ev.Kind, ev.Detail))
		}
	}
	if len(tookByFleet) > 0 {
		r.t.Logf("leaked holdings a cancel of their task took, not the reaper:\n%s", strings.Join(tookByFleet, "\n"))
	}
	for _, ref := range slices.SortedFunc(maps.Keys(need), compareRefs) {
		if n := need[ref]; wire[ref] < n {
			out = append(out, fmt.Sprintf("%s: leaked %d times (%s), released by the reaper %d times",
				ref, n, strings.Join(leakedBy[ref], "; "), wire[ref]))
		}
	}
	return out, nil
}

// taskAccountingProblems: every task the reaper finished is in a report as
// updated to its state, once, and every update a report claims is in the
// database; requeues only ever hit claims of killed workers, and every task
// a kill left claimed or running was requeued or finished by the reaper.
func (r *run) taskAccountingProblems(rec recorded) ([]string, error) {
	finished := map[string]reaper.TaskFinding{}
	requeued := map[string]int{}
	var out []string
	for _, tf := range rec.updated {
		if tf.ClearClaim {
			requeued[tf.ID]++
			continue
		}
		if prev, dup := finished[tf.ID]; dup {
			out = append(out, fmt.Sprintf("task %s finished twice: %s then %s", tf.ID, prev.StateAfter, tf.StateAfter))
		}
		finished[tf.ID] = tf
	}

	inDB, err := r.reapedTasks()
	if err != nil {
		return nil, err
	}
	for id, state := range inDB {
		tf, ok := finished[id]
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("task %s is %s by the reaper but no report says it updated it", id, state))
		case tf.StateAfter != state:
			out = append(out, fmt.Sprintf("task %s is %s, its report says %s", id, state, tf.StateAfter))
		}
	}
	for id, tf := range finished {
		if _, ok := inDB[id]; !ok {
			out = append(out, fmt.Sprintf("a report says task %s became %s, the database disagrees", id, tf.StateAfter))
		}
	}

	killed := map[string]bool{}
	for _, ev := range r.fleet.Faults() {
		if ev.Kind != sim.FaultKill {
			continue
		}
		killed[ev.Process] = true
		_, fin := finished[ev.Task]
		switch ev.Detail {
		case "died after claim":
			if requeued[ev.Task] == 0 && !fin {
				out = append(out, fmt.Sprintf("task %s, claimed by %s when it died, was never requeued", ev.Task, ev.Process))
			}
		case "died while running":
			if !fin {
				out = append(out, fmt.Sprintf("task %s, running under %s when it died, was never finished", ev.Task, ev.Process))
			}
		}
	}
	live := map[string]string{} // owner name -> its live row
	for _, p := range r.fleet.Processes() {
		if p.Alive {
			live[p.Name] = p.AppStatusID
		}
	}
	for _, tf := range rec.updated {
		if tf.ClearClaim && (!killed[tf.Owner] || live[tf.Owner] == tf.AppLockID) {
			out = append(out, fmt.Sprintf("task %s requeued although its claim by %s (row %s) was not a killed worker's", tf.ID, tf.Owner, tf.AppLockID))
		}
	}
	slices.Sort(out)
	return out, nil
}

func unionKeys[K comparable, V any](a, b map[K]V) map[K]bool {
	out := make(map[K]bool, len(a)+len(b))
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}

func compareRefs(a, b holdingRef) int {
	if c := strings.Compare(a.Key, b.Key); c != 0 {
		return c
	}
	return strings.Compare(a.Owner, b.Owner)
}

// leakKinds are the faults that leave the locks of their task behind.
var leakKinds = []sim.FaultKind{
	sim.FaultLeakBeforeClaim, sim.FaultFinalNoRelease, sim.FaultCancelPathError, sim.FaultSupervisorError,
	sim.FaultCancelRace, sim.FaultImmediateRelease, sim.FaultKill,
}

func leakEvents(all []sim.FaultEvent) []sim.FaultEvent {
	var out []sim.FaultEvent
	for _, ev := range all {
		if ev.Task != "" && slices.Contains(leakKinds, ev.Kind) {
			out = append(out, ev)
		}
	}
	return out
}

// taskHolding is one holding of one task.
type taskHolding struct {
	task string
	ref  holdingRef
}

// fleetReleases counts, by task and holding, what the fleet's own releases
// of other owners' holdings took.
func fleetReleases(rels []sim.SelfRelease) map[taskHolding]int {
	out := map[taskHolding]int{}
	for _, rel := range rels {
		for _, k := range rel.Keys {
			out[taskHolding{task: rel.Task, ref: holdingRef{Key: k, Owner: rel.Owner}}]++
		}
	}
	return out
}

// taskRows returns the reserved_resources_record of each task that has a row.
func (r *run) taskRows(ids []string) (map[string][]string, error) {
	rows, err := r.pool.Query(r.ctx, `SELECT pulp_id::text, coalesce(reserved_resources_record, '{}')
FROM core_task WHERE pulp_id = ANY($1::uuid[])`, ids)
	if err != nil {
		return nil, fmt.Errorf("read leaked tasks: %w", err)
	}
	out := map[string][]string{}
	var id string
	var record []string
	_, err = pgx.ForEachRow(rows, []any{&id, &record}, func() error {
		out[id] = record
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read leaked tasks: %w", err)
	}
	return out, nil
}

// reapedTasks returns the state of every task whose error reason the reaper
// wrote.
func (r *run) reapedTasks() (map[string]string, error) {
	rows, err := r.pool.Query(r.ctx, `SELECT pulp_id::text, state FROM core_task WHERE error->>'reason' LIKE '%' || $1 || '%'`, reaperReasonMark)
	if err != nil {
		return nil, fmt.Errorf("read reaped tasks: %w", err)
	}
	out := map[string]string{}
	var id, state string
	_, err = pgx.ForEachRow(rows, []any{&id, &state}, func() error {
		out[id] = state
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read reaped tasks: %w", err)
	}
	return out, nil
}
