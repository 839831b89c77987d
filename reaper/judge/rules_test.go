package judge

import (
	"fmt"
	"testing"
	"time"

	"github.com/lock-reaper/lock-reaper/heartbeat"
	"github.com/stretchr/testify/require"
)

// The first layer of the judge's tests: each decision function called with
// its facts, one case per row of docs/verdicts.md, as podgc's tests call
// gcOrphaned. The whole-snapshot tables (task_lock_test.go, resource_test.go,
// lost_test.go, ...) are the second layer, and the property tests
// (property_test.go, findings_property_test.go) the third.

var rtNow = time.Date(2026, 7, 24, 12, 0, 0, 0, time.UTC)

// TestRuleLockOwnerLiveness is the row of the owner liveness table the
// judge decides: an immediate-<uuid> owner lives while its task does
// (heartbeat/rules_test.go has the rows by heartbeat).
func TestRuleLockOwnerLiveness(t *testing.T) {
	t.Parallel()
	fleet := heartbeat.NewFleet(nil, rtNow, jtHeartbeatGrace)
	id := "0198a5c4-0000-7000-8000-000000000001"
	owner := ImmediateOwnerPrefix + id
	for state, want := range map[string]heartbeat.Liveness{StateRunning: heartbeat.Alive, StateWaiting: heartbeat.Alive, StateCompleted: heartbeat.Gone, StateCanceled: heartbeat.Gone} {
		tasks := map[string]Task{id: {ID: id, State: state}}
		require.Equal(t, want, LockOwner(tasks, fleet, owner).Liveness, "immediate-<uuid> with its task "+state)
	}
	require.Equal(t, heartbeat.Alive, LockOwner(nil, fleet, owner).Liveness, "immediate-<uuid> whose row is not visible yet")
}

// TestRuleTaskLock is the task lock table, first matching row first.
func TestRuleTaskLock(t *testing.T) {
	t.Parallel()
	p := jtPolicy()
	running := taskLockFacts{owner: heartbeat.Alive, found: true, state: StateRunning}
	with := func(f taskLockFacts, change func(*taskLockFacts)) taskLockFacts { change(&f); return f }
	for _, c := range []struct {
		row  string
		f    taskLockFacts
		want Verdict
	}{
		{"task-finished: final, finished_at older than finished_grace", with(running, func(f *taskLockFacts) {
			f.state, f.finished, f.finishedFor = StateCompleted, true, p.FinishedGrace+time.Second
		}), VerdictTaskFinished},
		{"task-finished: final, finished_at NULL", with(running, func(f *taskLockFacts) { f.state = StateFailed }), VerdictTaskFinished},
		{"pending: final within finished_grace", with(running, func(f *taskLockFacts) {
			f.state, f.finished, f.finishedFor = StateCanceled, true, p.FinishedGrace
		}), VerdictPending},
		{"pending: owner late", with(running, func(f *taskLockFacts) { f.owner = heartbeat.Late }), VerdictPending},
		{"owner-dead", with(running, func(f *taskLockFacts) { f.owner = heartbeat.Dead }), VerdictOwnerDead},
		{"owner-gone", with(running, func(f *taskLockFacts) { f.owner = heartbeat.Gone }), VerdictOwnerGone},
		{"task-missing: no row for T", taskLockFacts{owner: heartbeat.Alive}, VerdictTaskMissing},
		{"healthy: owner immediate-<T>, T incomplete", with(running, func(f *taskLockFacts) { f.immediate = true }), VerdictHealthy},
		{"healthy: app_lock row online and named O", with(running, func(f *taskLockFacts) { f.claimedByOwner, f.claim = true, heartbeat.Alive }), VerdictHealthy},
		{"pending: app_lock row named O and late", with(running, func(f *taskLockFacts) { f.claimedByOwner, f.claim = true, heartbeat.Late }), VerdictPending},
		{"task-lost: app_lock row named O but dead", with(running, func(f *taskLockFacts) { f.claimedByOwner, f.claim = true, heartbeat.Dead }), VerdictTaskLost},
		{"unclaimed: app_lock NULL or another owner's", running, VerdictUnclaimed},
	} {
		require.Equal(t, c.want, decideTaskLock(c.f, p), c.row)
	}
}

// TestRuleResource is the resource holding table.
func TestRuleResource(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		row           string
		f             resourceFacts
		want          Verdict
		wantInherited bool
	}{
		{"justified: a kept task lock's task reserves it", resourceFacts{owner: heartbeat.Dead, kept: true, released: true, inherits: true}, VerdictJustified, false},
		{"justified by the task row: owner alive", resourceFacts{owner: heartbeat.Alive, rowReserves: true, released: true, inherits: true}, VerdictJustified, false},
		{"justified by the task row: owner late", resourceFacts{owner: heartbeat.Late, rowReserves: true}, VerdictJustified, false},
		{"a task row does not justify a dead owner's holding", resourceFacts{owner: heartbeat.Dead, rowReserves: true}, VerdictOwnerDead, false},
		{"the released task lock's verdict", resourceFacts{owner: heartbeat.Alive, released: true, inherits: true}, noVerdict, true},
		{"an opaque shared membership inherits nothing", resourceFacts{owner: heartbeat.Alive, released: true}, VerdictNoTask, false},
		{"owner-dead", resourceFacts{owner: heartbeat.Dead}, VerdictOwnerDead, false},
		{"owner-gone", resourceFacts{owner: heartbeat.Gone}, VerdictOwnerGone, false},
		{"no-task: owner alive", resourceFacts{owner: heartbeat.Alive}, VerdictNoTask, false},
		{"no-task: owner late", resourceFacts{owner: heartbeat.Late}, VerdictNoTask, false},
	} {
		v, inherited := decideResource(c.f)
		require.Equal(t, c.want, v, c.row)
		require.Equal(t, c.wantInherited, inherited, c.row)
	}
}

// TestRuleConfirmation: a suspect is confirmed confirm_after after its
// first sighting, by the database clock, and never by a clock gone back.
func TestRuleConfirmation(t *testing.T) {
	t.Parallel()
	p := jtPolicy()
	for _, c := range []struct {
		row       string
		firstSeen time.Time
		want      bool
	}{
		{"first sighting: a suspect", rtNow, false},
		{"seen again before confirm_after", rtNow.Add(-p.ConfirmAfter + time.Second), false},
		{"seen again confirm_after later", rtNow.Add(-p.ConfirmAfter), true},
		{"a sighting in the future (the clock went back)", rtNow.Add(time.Hour), false},
	} {
		require.Equal(t, c.want, confirmed(c.firstSeen, rtNow, p), c.row)
	}
	for _, v := range Verdicts {
		want := v == VerdictTaskMissing || v == VerdictUnclaimed || v == VerdictNoTask || v == VerdictStuckClaim ||
			v == VerdictStuckCanceling || v == VerdictStranded
		require.Equal(t, want, v.needsConfirmation(), v.String()+" says once confirmed")
	}
}

// TestRuleLostTask is the lost task table.
func TestRuleLostTask(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		row  string
		f    taskFacts
		want Verdict
	}{
		{"lost: running, its app_lock row dead", taskFacts{state: StateRunning, claimed: true, claim: heartbeat.Dead, locks: 1, fullScan: true}, VerdictLost},
		{"lost: canceling, its app_lock row gone", taskFacts{state: StateCanceling, claimed: true, claim: heartbeat.Gone, fullScan: true}, VerdictLost},
		{"lost: running, app_lock_id NULL", taskFacts{state: StateRunning, locks: 1, fullScan: true}, VerdictLost},
		{"not lost: running unclaimed under immediate-<T>", taskFacts{state: StateRunning, locks: 1, immediate: true, fullScan: true}, noVerdict},
		{"not lost: running under a live claim", taskFacts{state: StateRunning, claimed: true, claim: heartbeat.Alive, locks: 1, fullScan: true}, noVerdict},
		{"not lost: canceling under a late claim", taskFacts{state: StateCanceling, claimed: true, claim: heartbeat.Late, fullScan: true}, noVerdict},
		{"orphaned-claim: waiting, its app_lock row dead", taskFacts{state: StateWaiting, claimed: true, claim: heartbeat.Dead, locks: 1}, VerdictOrphanedClaim},
		{"orphaned-claim: waiting, its app_lock row gone", taskFacts{state: StateWaiting, claimed: true, claim: heartbeat.Gone}, VerdictOrphanedClaim},
		{"stuck-claim: waiting, app_lock alive, no task lock", taskFacts{state: StateWaiting, claimed: true, claim: heartbeat.Alive, fullScan: true}, VerdictStuckClaim},
		{"not stuck: no task lock in a registry-only read", taskFacts{state: StateWaiting, claimed: true, claim: heartbeat.Alive}, noVerdict},
		{"not stuck: waiting unclaimed", taskFacts{state: StateWaiting, fullScan: true}, noVerdict},
		{"unprotected: running, app_lock alive, no task:<T> in a full scan", taskFacts{state: StateRunning, claimed: true, claim: heartbeat.Alive, fullScan: true}, VerdictUnprotected},
		{"unprotected: running, app_lock late", taskFacts{state: StateRunning, claimed: true, claim: heartbeat.Late, fullScan: true}, VerdictUnprotected},
		{"unprotected: running, app_lock alive, its task lock held but a resource lock missing", taskFacts{state: StateRunning, claimed: true, claim: heartbeat.Alive, locks: 1, unheld: true, fullScan: true}, VerdictUnprotected},
		{"not unprotected: a resource lock missing in a registry-only read", taskFacts{state: StateRunning, claimed: true, claim: heartbeat.Alive, locks: 1, unheld: true}, noVerdict},
		{"not unprotected: canceling, a resource lock missing", taskFacts{state: StateCanceling, claimed: true, claim: heartbeat.Alive, locks: 1, unheld: true, fullScan: true}, noVerdict},
		{"final tasks get no verdict", taskFacts{state: StateCompleted, claimed: true, claim: heartbeat.Dead}, noVerdict},
		{"stranded: waiting, app_lock alive and too old, no task lock", taskFacts{state: StateWaiting, claimed: true, claim: heartbeat.Alive, fullScan: true, tooOld: true}, VerdictStranded},
		{"not stranded: too old but holding its task lock", taskFacts{state: StateWaiting, claimed: true, claim: heartbeat.Alive, locks: 1, fullScan: true, tooOld: true}, noVerdict},
		{"not stranded: too old, app_lock late", taskFacts{state: StateWaiting, claimed: true, claim: heartbeat.Late, fullScan: true, tooOld: true}, noVerdict},
		{"orphaned-claim, not stranded: too old and dead", taskFacts{state: StateWaiting, claimed: true, claim: heartbeat.Dead, fullScan: true, tooOld: true}, VerdictOrphanedClaim},
		{"claimed-not-started: waiting, app_lock alive, holding its task lock, started_at NULL", taskFacts{state: StateWaiting, claimed: true, claim: heartbeat.Alive, locks: 1, claimHolds: true, fullScan: true, neverStarted: true}, VerdictClaimedNotStarted},
		{"not claimed-not-started: started_at unreadable", taskFacts{state: StateWaiting, claimed: true, claim: heartbeat.Alive, locks: 1, claimHolds: true, fullScan: true, startsUnread: true}, noVerdict},
	} {
		require.Equal(t, c.want, decideTask(c.f), c.row)
	}
}

// TestRuleActions: each verdict's action before confirmation, as the
// tables' action columns give it.
func TestRuleActions(t *testing.T) {
	t.Parallel()
	want := map[Verdict]Action{
		VerdictHealthy: ActionKeep, VerdictJustified: ActionKeep, VerdictPending: ActionKeep,
		VerdictTaskFinished: ActionRelease, VerdictOwnerDead: ActionRelease, VerdictOwnerGone: ActionRelease, VerdictTaskLost: ActionRelease,
		VerdictTaskMissing: ActionSuspect, VerdictUnclaimed: ActionSuspect, VerdictNoTask: ActionSuspect,
		VerdictLost: ActionUpdate, VerdictOrphanedClaim: ActionUpdate, VerdictStuckClaim: ActionUpdate, VerdictUnprotected: ActionReport,
		VerdictStuckCanceling:    ActionUpdate,
		VerdictStranded:          ActionUpdate,
		VerdictClaimedNotStarted: ActionReport,
	}
	require.Len(t, want, len(Verdicts), "every verdict of the catalogue")
	for _, v := range Verdicts {
		require.Equal(t, want[v], v.action(), v.String())
	}
}

// TestRuleMassDeathCount is the guard's rule for one worker row.
func TestRuleMassDeathCount(t *testing.T) {
	t.Parallel()
	const window = MassDeathWindow
	for _, c := range []struct {
		row           string
		r             heartbeat.WorkerRow
		seen, anyLive bool
		want          massDeathRowCount
	}{
		{"a live row counts as a worker", heartbeat.WorkerRow{Live: true}, false, true, countedLive},
		{"a restart under the same name is not counted", heartbeat.WorkerRow{Superseded: true, DeadFor: time.Second}, true, true, notCounted},
		{"dead within the window", heartbeat.WorkerRow{DeadFor: window}, false, true, countedRecent},
		{"dead long, no row alive: every row counts", heartbeat.WorkerRow{DeadFor: time.Hour}, false, false, countedRecent},
		{"dead long, a pass saw it alive", heartbeat.WorkerRow{DeadFor: time.Hour}, true, true, countedRemembered},
		{"dead long, seen alive, the pods prove the death", heartbeat.WorkerRow{DeadFor: time.Hour, PodProven: true}, true, true, notCounted},
		{"dead long before any pass saw it (a rolling restart's old row)", heartbeat.WorkerRow{DeadFor: window + time.Second}, false, true, notCounted},
	} {
		require.Equal(t, c.want, massDeathCountsAs(c.r, c.seen, c.anyLive, window), c.row)
	}
	p := jtPolicy()
	for _, c := range []struct {
		row   string
		count MassDeathCount
		force bool
		want  bool
	}{
		{"more than max_dead_fraction of min_workers", MassDeathCount{Workers: 5, Dead: 3}, false, true},
		{"exactly max_dead_fraction", MassDeathCount{Workers: 4, Dead: 2}, false, false},
		{"fewer than min_workers", MassDeathCount{Workers: 2, Dead: 2}, false, false},
		{"--force", MassDeathCount{Workers: 5, Dead: 5}, true, false},
	} {
		q := p
		q.Force = c.force
		require.Equal(t, c.want, decideMassDeath(c.count, q), c.row)
	}
}

// TestRuleLimitPerPass: max_releases and max_task_updates cut between
// units, never inside one; a first unit over the limit goes alone.
func TestRuleLimitPerPass(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		row          string
		units        []string // the unit of each item with work
		limit        int
		wantDeferred []int
	}{
		{"under the limit: nothing deferred", []string{"a", "b"}, 2, nil},
		{"cut between units", []string{"a", "a", "b", "b"}, 3, []int{2, 3}},
		{"a first unit over the limit goes alone", []string{"a", "a", "a", "b"}, 2, []int{3}},
		{"a limit of zero defers everything", []string{"a"}, 0, []int{0}},
	} {
		var deferred []int
		wanted, n := limitPerPass(len(c.units), c.limit, func(i int) (string, bool) { return c.units[i], true }, func(i int) { deferred = append(deferred, i) })
		require.Equal(t, len(c.units), wanted, c.row)
		require.Equal(t, len(c.wantDeferred), n, c.row)
		require.Equal(t, fmt.Sprint(c.wantDeferred), fmt.Sprint(deferred), c.row)
	}
}

// TestRuleAfterRelease: the cancel signal, and the requeue's wait for its
// task lock.
func TestRuleAfterRelease(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		row  string
		tj   TaskJudgement
		want bool
	}{
		{"a running task canceled is signalled", TaskJudgement{StateBefore: StateRunning, StateAfter: StateCanceled}, true},
		{"a canceling task failed is signalled", TaskJudgement{StateBefore: StateCanceling, StateAfter: StateFailed}, true},
		{"a waiting task canceled has no worker to tell", TaskJudgement{StateBefore: StateWaiting, StateAfter: StateCanceled}, false},
		{"a requeue is no cancel", TaskJudgement{StateBefore: StateRunning, StateAfter: StateWaiting, ClearClaim: true}, false},
	} {
		require.Equal(t, c.want, NeedsCancelSignal(&c.tj), c.row)
	}
	key := TaskKeyPrefix + "0198a5c4-0000-7000-8000-000000000001"
	requeue := TaskJudgement{StateBefore: StateWaiting, StateAfter: StateWaiting, ClearClaim: true, AfterRelease: key}
	require.True(t, UpdateWaits(&requeue, map[string]bool{key: true}), "its task lock is still held")
	require.False(t, UpdateWaits(&requeue, map[string]bool{}), "its task lock was released")
	require.False(t, UpdateWaits(&TaskJudgement{}, map[string]bool{key: true}), "an update that waits for no lock")
}

// TestRuleSignalLifetimeLeft: a cancel signal published again lives for what
// is left of the first one's 24 hours from the task's end, never longer, and
// not at all once they have passed.
func TestRuleSignalLifetimeLeft(t *testing.T) {
	t.Parallel()
	require.Equal(t, 24*time.Hour, SignalLifetimeLeft(rtNow, rtNow), "a task finished just now")
	require.Equal(t, 23*time.Hour, SignalLifetimeLeft(rtNow.Add(-time.Hour), rtNow))
	require.LessOrEqual(t, SignalLifetimeLeft(rtNow.Add(-24*time.Hour), rtNow), time.Duration(0), "the signal would have expired")
	require.Negative(t, SignalLifetimeLeft(rtNow.Add(-25*time.Hour), rtNow))
}
