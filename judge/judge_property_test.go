package judge

// Property tests of the judge (All, Findings) over random fleets. Every property is stated from
// verdicts.md and pulp-protocol.md, not from the rules' code: the helpers below
// recompute liveness, health and the guards on their own.

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/lock-reaper/lock-reaper/heartbeat"
)

// ptCase is one random snapshot with the policy to judge it by.
type ptCase struct {
	snap Snapshot
	p    Policy
}

var (
	ptWorkerNames = []string{"1@worker-0", "1@worker-1", "1@worker-2", "2@worker-2", "1@worker-3"}
	ptAPINames    = []string{"7@api-0", "8@api-1"}
	ptStates      = []string{StateWaiting, StateRunning, StateCanceling, StateCompleted, StateFailed, StateCanceled, StateSkipped}
	ptResources   = []string{
		"prn:core.domain:00000000-0000-4000-8000-000000000001",
		"prn:core.domain:00000000-0000-4000-8000-000000000002",
		"prn:rpm.rpmrepository:0198a5c4-0000-7000-8000-0000000000a1",
		"prn:rpm.rpmrepository:0198a5c4-0000-7000-8000-0000000000a2",
		"prn:file.filerepository:0198a5c4-0000-7000-8000-0000000000b1",
		"/pulp/api/v3/distributions/",
	}
	ptAllVerdicts = []Verdict{
		VerdictHealthy, VerdictPending, VerdictTaskFinished, VerdictOwnerDead, VerdictOwnerGone,
		VerdictTaskMissing, VerdictTaskLost, VerdictUnclaimed, VerdictNoTask, VerdictJustified,
		VerdictLost, VerdictOrphanedClaim, VerdictStuckClaim,
	}
)

// ptSeconds draws a duration in [lo, hi] seconds with millisecond steps.
func ptSeconds(t *rapid.T, lo, hi int, label string) time.Duration {
	return time.Duration(rapid.Int64Range(int64(lo)*1000, int64(hi)*1000).Draw(t, label)) * time.Millisecond
}

// ptAge draws a heartbeat age that spans alive, late and dead, with the
// boundaries of verdicts.md drawn on purpose. In an outage most rows are dead.
func ptAge(t *rapid.T, ttl, grace time.Duration, outage bool) time.Duration {
	kinds := []string{"alive", "alive", "alive", "ttl", "ttl+1ns", "late", "ttl+grace", "ttl+grace+1ns", "dead", "dead", "future"}
	if outage {
		kinds = []string{"alive", "late", "dead", "dead", "dead", "dead"}
	}
	switch rapid.SampledFrom(kinds).Draw(t, "age kind") {
	case "alive":
		return time.Duration(rapid.Int64Range(0, int64(ttl)).Draw(t, "alive age"))
	case "ttl":
		return ttl
	case "ttl+1ns":
		return ttl + 1
	case "late":
		return ttl + time.Duration(rapid.Int64Range(0, int64(grace)).Draw(t, "late by"))
	case "ttl+grace":
		return ttl + grace
	case "ttl+grace+1ns":
		return ttl + grace + 1
	case "dead":
		return ttl + grace + ptSeconds(t, 0, 3600, "dead by") + 1
	default:
		return -ptSeconds(t, 0, 30, "ahead by")
	}
}

// ptRedis models what pulpcore's acquire script allows: one owner per
// task key and exclusive key, and sets of owners for shared keys.
type ptRedis struct {
	tasks     map[string]string
	exclusive map[string]string
	shared    map[string]map[string]bool
	holdings  []Holding
}

func (r *ptRedis) acquire(t *rapid.T, owner, taskID string, reserved []string) bool {
	if _, taken := r.tasks[taskID]; taken {
		return false
	}
	var excl, shared []string
	for _, rr := range reserved {
		if name, ok := strings.CutPrefix(rr, "shared:"); ok {
			shared = append(shared, name)
		} else {
			excl = append(excl, rr)
		}
	}
	for _, name := range excl {
		if _, ok := r.exclusive[name]; ok {
			return false
		}
		if _, ok := r.shared[name]; ok {
			return false
		}
	}
	for _, name := range shared {
		if _, ok := r.exclusive[name]; ok {
			return false
		}
	}
	registered := rapid.Bool().Draw(t, "registered")
	r.tasks[taskID] = owner
	r.holdings = append(r.holdings, Holding{Key: TaskKeyPrefix + taskID, Kind: KindTask, Owner: owner, Registered: registered})
	for _, name := range excl {
		r.exclusive[name] = owner
		r.holdings = append(r.holdings, Holding{Key: ResourceKeyPrefix + name, Kind: KindExclusive, Owner: owner, Registered: registered})
	}
	for _, name := range shared {
		if r.shared[name] == nil {
			r.shared[name] = map[string]bool{}
		}
		if !r.shared[name][owner] {
			r.shared[name][owner] = true
			r.holdings = append(r.holdings, Holding{Key: ResourceKeyPrefix + name, Kind: KindShared, Owner: owner, Registered: registered})
		}
	}
	return true
}

// stray adds a leaked resource holding, if Redis could hold it.
func (r *ptRedis) stray(owner, name string, kind Kind) {
	switch kind {
	case KindExclusive:
		if _, ok := r.exclusive[name]; ok {
			return
		}
		if _, ok := r.shared[name]; ok {
			return
		}
		r.exclusive[name] = owner
	case KindShared:
		if _, ok := r.exclusive[name]; ok {
			return
		}
		if r.shared[name][owner] {
			return
		}
		if r.shared[name] == nil {
			r.shared[name] = map[string]bool{}
		}
		r.shared[name][owner] = true
	}
	r.holdings = append(r.holdings, Holding{Key: ResourceKeyPrefix + name, Kind: kind, Owner: owner, Registered: false})
}

// ptGen draws a random fleet: AppStatus rows with colliding names, tasks in
// every state with random claims, locks taken the way Pulp takes them, leaked
// locks, immediate owners, remembered suspects, and a random policy.
func ptGen(t *rapid.T) ptCase { return ptGenerate(t, rapid.IntRange(0, 2).Draw(t, "outage") == 0) }

// ptGenerate draws a fleet; in an outage most rows are dead.
func ptGenerate(t *rapid.T, outage bool) ptCase {
	now := jtNow
	p := Policy{
		HeartbeatGrace:  ptSeconds(t, 0, 60, "heartbeat_grace"),
		FinishedGrace:   ptSeconds(t, 0, 120, "finished_grace"),
		ConfirmAfter:    ptSeconds(t, 0, 300, "confirm_after"),
		LostRunning:     rapid.SampledFrom([]string{StateCanceled, StateFailed}).Draw(t, "lost_running"),
		OrphanedWaiting: rapid.SampledFrom([]string{WaitingRequeue, WaitingCancel}).Draw(t, "orphaned_waiting"),
		MaxDeadFraction: rapid.SampledFrom([]float64{0, 0.25, 0.5, 0.75, 1}).Draw(t, "max_dead_fraction"),
		MinWorkers:      rapid.IntRange(0, 6).Draw(t, "min_workers"),
		Force:           rapid.IntRange(0, 3).Draw(t, "force") == 0,
		MaxReleases:     rapid.IntRange(0, 40).Draw(t, "max_releases"),
		MaxTaskUpdates:  rapid.IntRange(0, 12).Draw(t, "max_task_updates"),
	}
	snap := Snapshot{Now: now, Tasks: map[string]Task{}, Suspects: map[SuspectKey]Suspect{}, FullScan: rapid.Bool().Draw(t, "full scan")}
	next := 0
	newID := func() string { next++; return jtID(next) }

	// core_appstatus rows.
	for range rapid.IntRange(0, 10).Draw(t, "rows") {
		appType := rapid.SampledFrom([]string{"worker", "worker", "api"}).Draw(t, "app type")
		names := ptWorkerNames
		if appType == "api" {
			names = ptAPINames
		}
		ttl := ptSeconds(t, 1, 120, "ttl")
		snap.AppStatuses = append(snap.AppStatuses, heartbeat.AppStatus{
			ID: newID(), Name: rapid.SampledFrom(names).Draw(t, "row name"), AppType: appType,
			TTL: ttl, LastHeartbeat: now.Add(-ptAge(t, ttl, p.HeartbeatGrace, outage)),
		})
	}
	rowIDs := []string{"", jtID(9999)} // NULL and a row that does not exist
	for _, r := range snap.AppStatuses {
		rowIDs = append(rowIDs, r.ID, r.ID, r.ID)
	}
	// Restarted workers: a dead row and its live successor share the name;
	// the dead row's tasks are the lost ones.
	for range rapid.IntRange(0, 2).Draw(t, "restarts") {
		name := rapid.SampledFrom(ptWorkerNames).Draw(t, "restarted name")
		dead := heartbeat.AppStatus{ID: newID(), Name: name, AppType: "worker", TTL: jtWorkerTTL,
			LastHeartbeat: now.Add(-jtWorkerTTL - p.HeartbeatGrace - ptSeconds(t, 0, 600, "dead for") - 1)}
		live := heartbeat.AppStatus{ID: newID(), Name: name, AppType: "worker", TTL: jtWorkerTTL,
			LastHeartbeat: now.Add(-ptSeconds(t, 0, 10, "beat"))}
		snap.AppStatuses = append(snap.AppStatuses, dead, live)
		rowIDs = append(rowIDs, dead.ID, dead.ID, dead.ID, dead.ID, live.ID, live.ID)
	}

	// core_task rows.
	var taskIDs []string
	for range rapid.IntRange(0, 14).Draw(t, "tasks") {
		id := newID()
		state := rapid.SampledFrom(append([]string{StateWaiting, StateRunning, StateRunning}, ptStates...)).Draw(t, "state")
		task := Task{ID: id, Name: "pulp_rpm.app.tasks.synchronize", State: state}
		task.AppLockID = rapid.SampledFrom(rowIDs).Draw(t, "app_lock")
		for _, res := range ptResources {
			switch rapid.IntRange(0, 3).Draw(t, "reserve") {
			case 1:
				task.Reserved = append(task.Reserved, res)
			case 2:
				task.Reserved = append(task.Reserved, "shared:"+res)
			}
		}
		if Final(task.State) && rapid.IntRange(0, 4).Draw(t, "finished_at set") > 0 {
			var ago time.Duration
			if rapid.Bool().Draw(t, "finished at grace") {
				ago = p.FinishedGrace + time.Duration(rapid.IntRange(-1, 1).Draw(t, "grace offset"))
			} else {
				ago = ptSeconds(t, -5, 300, "finished ago")
			}
			at := now.Add(-ago)
			task.FinishedAt = &at
		}
		snap.Tasks[id] = task
		taskIDs = append(taskIDs, id)
	}

	// Locks, acquired as Pulp does: a task lock and all its reserved
	// resources under one owner, or nothing when something conflicts.
	redis := &ptRedis{tasks: map[string]string{}, exclusive: map[string]string{}, shared: map[string]map[string]bool{}}
	ownerPool := append(append([]string{"3@ghost"}, ptWorkerNames...), ptAPINames...)
	for _, id := range taskIDs {
		task := snap.Tasks[id]
		if rapid.IntRange(0, 3).Draw(t, "locked") == 0 {
			continue
		}
		candidates := []string{rapid.SampledFrom(ownerPool).Draw(t, "any owner"), immediateOwnerPrefix + id}
		for _, r := range snap.AppStatuses {
			if r.ID == task.AppLockID {
				candidates = append(candidates, r.Name, r.Name, r.Name)
			}
		}
		if len(taskIDs) > 0 {
			candidates = append(candidates, immediateOwnerPrefix+rapid.SampledFrom(taskIDs).Draw(t, "other immediate"))
		}
		redis.acquire(t, rapid.SampledFrom(candidates).Draw(t, "owner"), id, task.Reserved)
	}
	// Task locks of tasks the database does not have.
	for i := range rapid.IntRange(0, 2).Draw(t, "missing tasks") {
		id := jtID(5000 + i)
		owner := rapid.SampledFrom(append(slices.Clone(ownerPool), immediateOwnerPrefix+id)).Draw(t, "missing task owner")
		var reserved []string
		if rapid.Bool().Draw(t, "missing task reserves") {
			reserved = []string{"shared:" + ptResources[0]}
		}
		redis.acquire(t, owner, id, reserved)
	}
	// Leaked resource holdings.
	for range rapid.IntRange(0, 4).Draw(t, "strays") {
		owners := ownerPool
		if len(taskIDs) > 0 {
			owners = append(slices.Clone(ownerPool), immediateOwnerPrefix+rapid.SampledFrom(taskIDs).Draw(t, "stray immediate"))
		}
		redis.stray(rapid.SampledFrom(owners).Draw(t, "stray owner"), rapid.SampledFrom(ptResources).Draw(t, "stray resource"),
			rapid.SampledFrom([]Kind{KindExclusive, KindShared}).Draw(t, "stray kind"))
	}
	// Holdings a non-atomic read may see together although Redis never held
	// them at once (a key that changed type between the SCAN and the read):
	// anything, as long as a (key, owner) pair is read once.
	for range rapid.IntRange(0, 2).Draw(t, "racy") {
		owner := rapid.SampledFrom(ownerPool).Draw(t, "racy owner")
		name := rapid.SampledFrom(ptResources).Draw(t, "racy resource")
		key := ResourceKeyPrefix + name
		if !slices.ContainsFunc(redis.holdings, func(h Holding) bool { return h.Key == key && h.Owner == owner }) {
			kind := rapid.SampledFrom([]Kind{KindExclusive, KindShared}).Draw(t, "racy kind")
			redis.holdings = append(redis.holdings, Holding{Key: key, Kind: kind, Owner: owner, Registered: true})
		}
	}
	if n := len(redis.holdings); n > 0 && rapid.IntRange(0, 2).Draw(t, "flip kind") == 0 {
		i := rapid.IntRange(0, n-1).Draw(t, "flip")
		switch redis.holdings[i].Kind {
		case KindExclusive:
			redis.holdings[i].Kind = KindShared
		case KindShared:
			redis.holdings[i].Kind = KindExclusive
		}
	}
	// Partial leftovers: a release the reaper deferred, or a sweep that
	// stopped half-way, may leave some holdings of a task without others.
	holdings := redis.holdings
	if len(holdings) > 0 && rapid.IntRange(0, 3).Draw(t, "drop some") == 0 {
		drop := rapid.IntRange(0, len(holdings)-1).Draw(t, "drop")
		holdings = slices.Delete(slices.Clone(holdings), drop, drop+1)
	}
	snap.Holdings = rapid.Permutation(holdings).Draw(t, "holding order")

	// Suspects remembered from earlier passes, some about these holdings.
	suspectAge := func() time.Time { return now.Add(-ptSeconds(t, -60, 600, "suspect age")) }
	for _, h := range snap.Holdings {
		if rapid.IntRange(0, 2).Draw(t, "suspect holding") == 0 {
			snap.Suspects[SuspectKey{Key: h.Key, Owner: h.Owner}] = Suspect{Verdict: rapid.SampledFrom(ptAllVerdicts).Draw(t, "suspect verdict"), FirstSeen: suspectAge()}
		}
	}
	for _, id := range taskIDs {
		if task := snap.Tasks[id]; task.AppLockID != "" && rapid.IntRange(0, 2).Draw(t, "suspect claim") == 0 {
			snap.Suspects[stuckClaimKey(id, task.AppLockID)] = Suspect{Verdict: rapid.SampledFrom([]Verdict{VerdictStuckClaim, VerdictUnclaimed}).Draw(t, "claim verdict"), FirstSeen: suspectAge()}
		}
	}
	if rapid.Bool().Draw(t, "forgotten suspect") {
		snap.Suspects[SuspectKey{Key: ResourceKeyPrefix + "long-gone", Owner: "1@worker-0"}] = Suspect{Verdict: VerdictNoTask, FirstSeen: suspectAge()}
	}
	return ptCase{snap: snap, p: p}
}

// ---------------------------------------------------------------------------
// An independent reading of verdicts.md.

func ptFinal(state string) bool {
	return state == StateCompleted || state == StateFailed || state == StateCanceled || state == StateSkipped
}

// ptOnline is "last_heartbeat >= now() - ttl".
func ptOnline(r heartbeat.AppStatus, now time.Time) bool {
	return !r.LastHeartbeat.Before(now.Add(-r.TTL))
}

// ptRowDead is "last_heartbeat < now() - ttl - heartbeat_grace".
func ptRowDead(r heartbeat.AppStatus, now time.Time, grace time.Duration) bool {
	return r.LastHeartbeat.Before(now.Add(-r.TTL - grace))
}

func ptRow(c ptCase, id string) (heartbeat.AppStatus, bool) {
	for _, r := range c.snap.AppStatuses {
		if id != "" && r.ID == id {
			return r, true
		}
	}
	return heartbeat.AppStatus{}, false
}

// ptImmediateTask returns T of an immediate-<T> owner.
func ptImmediateTask(owner string) (string, bool) {
	id, ok := strings.CutPrefix(owner, "immediate-")
	if !ok || len(id) != 36 {
		return "", false
	}
	for i, c := range id {
		if i == 8 || i == 13 || i == 18 || i == 23 {
			if c != '-' {
				return "", false
			}
		} else if !strings.ContainsRune("0123456789abcdef", c) {
			return "", false
		}
	}
	return id, true
}

// ptLiveness is the owner liveness table of verdicts.md. For a name whose
// rows have different ttls, "late" is taken generously: some row within its
// ttl+grace and none online.
func ptLiveness(c ptCase, owner string) heartbeat.Liveness {
	if id, ok := ptImmediateTask(owner); ok {
		if t, found := c.snap.Tasks[id]; found && ptFinal(t.State) {
			return heartbeat.Gone
		}
		// Incomplete, or not visible yet: judge.go counts it alive; see
		// TestJudgeImmediateOwnerWithMissingTask.
		return heartbeat.Alive
	}
	rows, online, withinGrace := 0, false, false
	for _, r := range c.snap.AppStatuses {
		if r.Name != owner {
			continue
		}
		rows++
		online = online || ptOnline(r, c.snap.Now)
		withinGrace = withinGrace || !ptRowDead(r, c.snap.Now, c.p.HeartbeatGrace)
	}
	switch {
	case rows == 0:
		return heartbeat.Gone
	case online:
		return heartbeat.Alive
	case withinGrace:
		return heartbeat.Late
	default:
		return heartbeat.Dead
	}
}

// ptHealthyTask: the owner is alive, the task incomplete, and its app_lock
// row is online and named the owner, or the owner is immediate-<T>.
func ptHealthyTask(c ptCase, owner, taskID string) bool {
	t, ok := c.snap.Tasks[taskID]
	if !ok || ptFinal(t.State) {
		return false
	}
	if owner == "immediate-"+taskID {
		return true
	}
	if ptLiveness(c, owner) != heartbeat.Alive {
		return false
	}
	row, ok := ptRow(c, t.AppLockID)
	return ok && row.Name == owner && ptOnline(row, c.snap.Now)
}

func ptReserves(t Task, h Holding) bool {
	want := h.Resource()
	if h.Kind == KindShared {
		want = "shared:" + h.Resource()
	}
	return slices.Contains(t.Reserved, want)
}

// ptHealthy says whether a holding belongs to a healthy task: a healthy task
// lock, or a resource that a healthy task lock of the same owner reserves
// with the same kind.
func ptHealthy(c ptCase, h Holding) bool {
	if h.Kind == KindTask {
		return ptHealthyTask(c, h.Owner, h.TaskID())
	}
	for _, tl := range c.snap.Holdings {
		if tl.Kind == KindTask && tl.Owner == h.Owner && ptHealthyTask(c, tl.Owner, tl.TaskID()) && ptReserves(c.snap.Tasks[tl.TaskID()], h) {
			return true
		}
	}
	return false
}

// ptMassDeath is the mass-death guard of verdicts.md, less the dead rows
// whose name a row that is not dead carries again (a restart, not a death),
// and, while any worker row is not dead, less the rows dead for longer than
// MassDeathWindow (deaths long past, such as a rolling restart's).
func ptMassDeath(c ptCase) bool {
	restarted := map[string]bool{}
	anyLive := false
	for _, r := range c.snap.AppStatuses {
		if !ptRowDead(r, c.snap.Now, c.p.HeartbeatGrace) {
			restarted[r.Name] = true
			anyLive = anyLive || r.AppType == "worker"
		}
	}
	workers, dead := 0, 0
	for _, r := range c.snap.AppStatuses {
		rowDead := ptRowDead(r, c.snap.Now, c.p.HeartbeatGrace)
		longDead := c.snap.Now.Sub(r.LastHeartbeat) > r.TTL+c.p.HeartbeatGrace+MassDeathWindow
		if r.AppType != "worker" || (rowDead && restarted[r.Name]) || (rowDead && anyLive && longDead) {
			continue
		}
		workers++
		if rowDead {
			dead++
		}
	}
	return !c.p.Force && workers > 0 && workers >= c.p.MinWorkers && float64(dead) > c.p.MaxDeadFraction*float64(workers)
}

func ptNeedsConfirmation(v Verdict) bool {
	return v == VerdictTaskMissing || v == VerdictUnclaimed || v == VerdictNoTask || v == VerdictStuckClaim
}

// ptJudgement finds the one judgement of a holding.
func ptJudgement(t *rapid.T, plan Plan, h Holding) Judgement {
	var found []Judgement
	for _, jd := range plan.Holdings {
		if jd.Key == h.Key && jd.Owner == h.Owner && jd.Kind == h.Kind {
			found = append(found, jd)
		}
	}
	require.Len(t, found, 1, "judgements of %+v", h)
	return found[0]
}

// ---------------------------------------------------------------------------
// Properties

// The one mistake the reaper must never make.
func TestJudgePropertyHealthyNeverReleased(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		c := ptGen(t)
		plan := All(c.snap, c.p)
		require.Len(t, plan.Holdings, len(c.snap.Holdings))
		healthy := 0
		for _, h := range c.snap.Holdings {
			jd := ptJudgement(t, plan, h)
			if ptHealthy(c, h) {
				healthy++
				require.NotEqual(t, ActionRelease, jd.Action, "healthy holding %+v released as %s", h, jd.Verdict)
				require.Contains(t, []Verdict{VerdictHealthy, VerdictJustified}, jd.Verdict, "healthy holding %+v", h)
			}
		}
		// A task whose worker is online and holds its lock is not lost.
		for _, tj := range plan.Tasks {
			if tj.Action != ActionUpdate {
				continue
			}
			for _, h := range c.snap.Holdings {
				if h.Kind == KindTask && h.TaskID() == tj.ID && !strings.HasPrefix(h.Owner, "immediate-") {
					require.False(t, ptHealthyTask(c, h.Owner, h.TaskID()), "healthy task %s updated as %s", tj.ID, tj.Verdict)
				}
			}
		}
		released := 0
		for _, jd := range plan.Holdings {
			if jd.Action == ActionRelease {
				released++
			}
		}
		t.Logf("%d holdings, %d healthy, %d released, %d tasks updated or suspected", len(c.snap.Holdings), healthy, released, len(plan.Tasks))
	})
}

// Same input, same plan, whatever the order Redis returned the holdings in;
// and the snapshot is left as it was.
func TestJudgePropertyDeterministic(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		c := ptGen(t)
		holdings := slices.Clone(c.snap.Holdings)
		suspects := map[SuspectKey]Suspect{}
		for k, s := range c.snap.Suspects {
			suspects[k] = s
		}
		first := All(c.snap, c.p)
		require.Equal(t, holdings, c.snap.Holdings, "Judge reordered the snapshot's holdings")
		require.Equal(t, suspects, c.snap.Suspects, "Judge changed the remembered suspects")

		require.Equal(t, first, All(c.snap, c.p))
		shuffled := c.snap
		shuffled.Holdings = rapid.Permutation(holdings).Draw(t, "reorder")
		require.Equal(t, first, All(shuffled, c.p))
	})
}

// Late owners are left alone: only task-finished (on the task lock, or
// inherited by its resources) and task-lost may release them, and no-task,
// which verdicts.md applies to "O alive or late" once confirmed.
func TestJudgePropertyLateOwnersLeftAlone(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		c := ptGen(t)
		plan := All(c.snap, c.p)
		for _, jd := range plan.Holdings {
			if jd.Action != ActionRelease || ptLiveness(c, jd.Owner) != heartbeat.Late {
				continue
			}
			require.Contains(t, []Verdict{VerdictTaskFinished, VerdictTaskLost, VerdictNoTask}, jd.Verdict, "late owner's %s released", jd.Key)
			if jd.Verdict == VerdictNoTask {
				s, ok := c.snap.Suspects[SuspectKey{Key: jd.Key, Owner: jd.Owner}]
				require.True(t, ok)
				require.Equal(t, VerdictNoTask, s.Verdict)
			}
		}
	})
}

// A finding that needs confirmation is released only after a suspect with
// the same key, owner and verdict was first seen at least confirm_after ago.
func TestJudgePropertyConfirmationBeforeRelease(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		c := ptGen(t)
		plan := All(c.snap, c.p)
		confirmed := func(k SuspectKey, v Verdict) {
			s, ok := c.snap.Suspects[k]
			require.True(t, ok, "%s of %+v released without a suspect", v, k)
			require.Equal(t, v, s.Verdict, "%+v", k)
			require.True(t, s.FirstSeen.Before(c.snap.Now), "%+v first seen %v", k, s.FirstSeen)
			require.GreaterOrEqual(t, c.snap.Now.Sub(s.FirstSeen), c.p.ConfirmAfter, "%+v", k)
		}
		for _, jd := range plan.Holdings {
			if jd.Action == ActionSuspect {
				require.True(t, ptNeedsConfirmation(jd.Verdict), "%s suspected", jd.Verdict)
				require.Contains(t, plan.Suspects, SuspectKey{Key: jd.Key, Owner: jd.Owner})
			}
			if jd.Action != ActionRelease || !ptNeedsConfirmation(jd.Verdict) {
				continue
			}
			if jd.Kind != KindTask && jd.Evidence.Via != "" {
				// Inherited from the task lock that was confirmed.
				confirmed(SuspectKey{Key: jd.Evidence.Via, Owner: jd.Owner}, jd.Verdict)
			} else {
				confirmed(SuspectKey{Key: jd.Key, Owner: jd.Owner}, jd.Verdict)
			}
		}
		for _, tj := range plan.Tasks {
			if tj.Verdict == VerdictStuckClaim && tj.Action == ActionUpdate {
				confirmed(SuspectKey{Key: "stuck-claim:" + tj.ID, Owner: tj.AppLockID}, VerdictStuckClaim)
			}
		}
		// On a full scan, only what this pass saw is remembered.
		if c.snap.FullScan {
			for k, s := range plan.Suspects {
				require.True(t, ptNeedsConfirmation(s.Verdict), "%+v", k)
				require.False(t, s.FirstSeen.After(c.snap.Now), "%+v", k)
			}
		}
	})
}

// When the mass-death guard trips, nothing is released on dead grounds and
// no task is updated; unless forced, or with too few workers.
func TestJudgePropertyMassDeathGuard(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		c := ptGenerate(t, rapid.IntRange(0, 3).Draw(t, "outage") > 0)
		plan := All(c.snap, c.p)
		trips := ptMassDeath(c)
		require.Equal(t, trips, jtHasGuard(plan, "mass-death"))
		for _, jd := range plan.Holdings {
			if !trips {
				require.NotEqual(t, "mass-death guard", jd.Deferred)
				continue
			}
			if jd.Action == ActionRelease && (jd.Verdict == VerdictOwnerDead || jd.Verdict == VerdictTaskLost) {
				require.NotEmpty(t, jd.Deferred, "%s released on dead grounds (%s) under mass death", jd.Key, jd.Verdict)
			}
		}
		for _, tj := range plan.Tasks {
			if trips && tj.Action == ActionUpdate {
				require.NotEmpty(t, tj.Deferred, "task %s updated under mass death", tj.ID)
			}
			if !trips {
				require.NotEqual(t, "mass-death guard", tj.Deferred)
			}
		}
	})
}

// Per-pass limits: at most max_releases releases and max_task_updates
// updates go ahead; only releases and updates are ever deferred.
func TestJudgePropertyLimits(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		c := ptGen(t)
		plan := All(c.snap, c.p)
		// A release goes with its unit: a task lock and the resource
		// holdings that inherit its verdict. Units are taken in plan order
		// until the next does not fit; a first unit larger than the limit
		// goes alone.
		unitOf := func(jd Judgement) SuspectKey {
			if jd.Kind != KindTask && jd.Evidence.Via != "" {
				return SuspectKey{Key: jd.Evidence.Via, Owner: jd.Owner}
			}
			return SuspectKey{Key: jd.Key, Owner: jd.Owner}
		}
		releases, wanted, cut := 0, 0, false
		unitSize, unitReleased := map[SuspectKey]int{}, map[SuspectKey]int{}
		for _, jd := range plan.Holdings {
			if jd.Deferred != "" {
				require.Equal(t, ActionRelease, jd.Action)
			}
			if jd.Action == ActionRelease && jd.Deferred != "mass-death guard" {
				wanted++
				unitSize[unitOf(jd)]++
			}
			if jd.Action == ActionRelease && jd.Deferred == "" {
				releases++
				unitReleased[unitOf(jd)]++
			}
			cut = cut || jd.Deferred == "max_releases"
		}
		for u, n := range unitReleased {
			require.Equal(t, unitSize[u], n, "unit %v is released whole or not at all", u)
		}
		if len(unitReleased) > 1 {
			require.LessOrEqual(t, releases, c.p.MaxReleases)
		}
		if wanted <= c.p.MaxReleases {
			require.Equal(t, wanted, releases)
		}
		if c.p.MaxReleases > 0 && wanted > 0 {
			require.Positive(t, releases, "a positive limit always releases something")
		}
		require.Equal(t, cut, jtHasGuard(plan, "max-releases"))
		require.Equal(t, wanted > releases, cut)

		updates, wantedUpdates := 0, 0
		for _, tj := range plan.Tasks {
			if tj.Deferred != "" {
				require.Equal(t, ActionUpdate, tj.Action)
			}
			if tj.Action == ActionUpdate && tj.Deferred != "mass-death guard" {
				wantedUpdates++
			}
			if tj.Action == ActionUpdate && tj.Deferred == "" {
				updates++
			}
		}
		require.LessOrEqual(t, updates, c.p.MaxTaskUpdates)
		require.Equal(t, min(wantedUpdates, c.p.MaxTaskUpdates), updates)
		require.Equal(t, wantedUpdates > c.p.MaxTaskUpdates, jtHasGuard(plan, "max-task-updates"))
	})
}

// Every verdict's condition holds, recomputed from the snapshot.
func TestJudgePropertyVerdictConditions(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		c := ptGen(t)
		plan := All(c.snap, c.p)
		taskLocked := map[string]bool{}
		for _, h := range c.snap.Holdings {
			if h.Kind == KindTask {
				taskLocked[h.TaskID()] = true
			}
		}
		for _, jd := range plan.Holdings {
			live := ptLiveness(c, jd.Owner)
			require.Equal(t, live, jd.Evidence.OwnerLiveness, "%s of %s", jd.Key, jd.Owner)
			taskID := jd.TaskID()
			if jd.Kind != KindTask {
				if !slices.Contains([]Verdict{VerdictNoTask, VerdictOwnerDead, VerdictOwnerGone}, jd.Verdict) {
					require.NotEmpty(t, jd.Evidence.Via, "%s %s: justified or inherited", jd.Key, jd.Verdict)
				}
				if jd.Evidence.Via != "" {
					id, ok := strings.CutPrefix(jd.Evidence.Via, TaskKeyPrefix)
					require.True(t, ok && IsTaskUUID(id))
					taskID = id
					require.True(t, ptReserves(c.snap.Tasks[id], jd.Holding), "%s via %s", jd.Key, jd.Evidence.Via)
				}
			}
			task, found := c.snap.Tasks[taskID]
			what := fmt.Sprintf("%s held by %s: %s", jd.Key, jd.Owner, jd.Verdict)
			switch jd.Verdict {
			case VerdictTaskFinished:
				require.True(t, found && ptFinal(task.State), what)
				require.True(t, task.FinishedAt == nil || c.snap.Now.Sub(*task.FinishedAt) > c.p.FinishedGrace, what)
			case VerdictOwnerDead:
				require.Equal(t, heartbeat.Dead, live, what)
			case VerdictOwnerGone:
				require.Equal(t, heartbeat.Gone, live, what)
			case VerdictTaskMissing:
				require.False(t, found, what)
				require.Equal(t, heartbeat.Alive, live, what)
			case VerdictTaskLost:
				require.True(t, found && !ptFinal(task.State), what)
				row, ok := ptRow(c, task.AppLockID)
				require.True(t, ok && row.Name == jd.Owner && ptRowDead(row, c.snap.Now, c.p.HeartbeatGrace), what)
				require.Equal(t, heartbeat.Alive, live, what)
			case VerdictUnclaimed:
				require.True(t, found && !ptFinal(task.State), what)
				require.Equal(t, heartbeat.Alive, live, what)
				row, ok := ptRow(c, task.AppLockID)
				require.True(t, !ok || row.Name != jd.Owner, what)
			case VerdictNoTask:
				require.Contains(t, []heartbeat.Liveness{heartbeat.Alive, heartbeat.Late}, live, what)
			case VerdictHealthy:
				require.True(t, ptHealthyTask(c, jd.Owner, taskID), what)
			case VerdictPending:
				require.True(t, live == heartbeat.Late || found && ptFinal(task.State) || found && func() bool {
					row, ok := ptRow(c, task.AppLockID)
					return ok && row.Name == jd.Owner && !ptOnline(row, c.snap.Now) && !ptRowDead(row, c.snap.Now, c.p.HeartbeatGrace)
				}(), what)
			case VerdictJustified:
				require.Equal(t, ActionKeep, jd.Action, what)
			default:
				require.Failf(t, "unexpected verdict", what)
			}
		}
		for _, tj := range plan.Tasks {
			task := c.snap.Tasks[tj.ID]
			row, claimed := ptRow(c, task.AppLockID)
			what := fmt.Sprintf("task %s %s: %s", tj.ID, task.State, tj.Verdict)
			require.Equal(t, task.State, tj.StateBefore, what)
			require.Equal(t, task.AppLockID, tj.AppLockID, what)
			switch tj.Verdict {
			case VerdictLost:
				require.Contains(t, []string{StateRunning, StateCanceling}, task.State, what)
				require.True(t, task.AppLockID == "" || !claimed || ptRowDead(row, c.snap.Now, c.p.HeartbeatGrace), what)
				want := StateCanceled
				if task.State == StateRunning {
					want = c.p.LostRunning
				}
				require.Equal(t, want, tj.StateAfter, what)
				require.True(t, strings.HasPrefix(tj.Reason, "Worker ") && strings.HasSuffix(tj.Reason, " has gone missing; lock reaper "+want+"."), what)
			case VerdictOrphanedClaim:
				require.Equal(t, StateWaiting, task.State, what)
				require.NotEmpty(t, task.AppLockID, what)
				require.True(t, !claimed || ptRowDead(row, c.snap.Now, c.p.HeartbeatGrace), what)
				if c.p.OrphanedWaiting == WaitingRequeue {
					require.True(t, tj.ClearClaim, what)
					require.Equal(t, StateWaiting, tj.StateAfter, what)
				} else {
					require.False(t, tj.ClearClaim, what)
					require.Equal(t, StateCanceled, tj.StateAfter, what)
				}
				if taskLocked[tj.ID] {
					require.Equal(t, []string{TaskKeyPrefix + tj.ID}, tj.AfterRelease, what)
				}
			case VerdictStuckClaim:
				require.Equal(t, StateWaiting, task.State, what)
				require.True(t, c.snap.FullScan, what)
				require.True(t, claimed && ptOnline(row, c.snap.Now), what)
				require.False(t, taskLocked[tj.ID], what)
			case VerdictUnprotected:
				// Reported only: a running task of a live claim whose lock
				// a full scan did not find.
				require.Equal(t, StateRunning, task.State, what)
				require.True(t, c.snap.FullScan, what)
				require.True(t, claimed && !ptRowDead(row, c.snap.Now, c.p.HeartbeatGrace), what)
				require.False(t, taskLocked[tj.ID], what)
				require.Equal(t, ActionReport, tj.Action, what)
				require.Equal(t, StateRunning, tj.StateAfter, what)
			default:
				require.Failf(t, "unexpected task verdict", what)
			}
		}
	})
}
