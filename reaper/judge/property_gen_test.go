package judge

// Property tests of the judge (All, Findings) over random fleets. Every property is stated from
// verdicts.md and pulp-protocol.md, not from the rules' code: the helpers below
// recompute liveness, health and the guards on their own.

import (
	"slices"
	"strings"
	"time"

	"github.com/lock-reaper/lock-reaper/heartbeat"
	"pgregory.net/rapid"
)

// The random fleets the property tests judge: rows, tasks and locks as
// pulpcore's protocol allows them, with outages, strays and races.

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

	// The mass-death guard's memory: rows earlier passes saw alive, and one
	// pulpcore has deleted since.
	if rapid.Bool().Draw(t, "seen alive") {
		snap.SeenAlive = map[string]SeenAlive{jtID(9998): {Name: "1@deleted", At: now.Add(-time.Hour)}}
		for _, r := range snap.AppStatuses {
			if rapid.Bool().Draw(t, "row seen alive") {
				snap.SeenAlive[r.ID] = SeenAlive{Name: r.Name, At: now.Add(-ptSeconds(t, 0, 3600, "seen ago"))}
			}
		}
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
		candidates := []string{rapid.SampledFrom(ownerPool).Draw(t, "any owner"), ImmediateOwnerPrefix + id}
		for _, r := range snap.AppStatuses {
			if r.ID == task.AppLockID {
				candidates = append(candidates, r.Name, r.Name, r.Name)
			}
		}
		if len(taskIDs) > 0 {
			candidates = append(candidates, ImmediateOwnerPrefix+rapid.SampledFrom(taskIDs).Draw(t, "other immediate"))
		}
		redis.acquire(t, rapid.SampledFrom(candidates).Draw(t, "owner"), id, task.Reserved)
	}
	// Task locks of tasks the database does not have.
	for i := range rapid.IntRange(0, 2).Draw(t, "missing tasks") {
		id := jtID(5000 + i)
		owner := rapid.SampledFrom(append(slices.Clone(ownerPool), ImmediateOwnerPrefix+id)).Draw(t, "missing task owner")
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
			owners = append(slices.Clone(ownerPool), ImmediateOwnerPrefix+rapid.SampledFrom(taskIDs).Draw(t, "stray immediate"))
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
	// Task locks lost alone (an eviction under allkeys-lru, a failover
	// that lost a write, an operator's DEL): their resources stay.
	if rapid.IntRange(0, 2).Draw(t, "evict task locks") == 0 {
		holdings = slices.DeleteFunc(slices.Clone(holdings), func(h Holding) bool {
			return h.Kind == KindTask && rapid.Bool().Draw(t, "evicted")
		})
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
			snap.Suspects[StuckClaimKey(id, task.AppLockID)] = Suspect{Verdict: rapid.SampledFrom([]Verdict{VerdictStuckClaim, VerdictUnclaimed}).Draw(t, "claim verdict"), FirstSeen: suspectAge()}
		}
	}
	if rapid.Bool().Draw(t, "forgotten suspect") {
		snap.Suspects[SuspectKey{Key: ResourceKeyPrefix + "long-gone", Owner: "1@worker-0"}] = Suspect{Verdict: VerdictNoTask, FirstSeen: suspectAge()}
	}
	return ptCase{snap: snap, p: p}
}

// ---------------------------------------------------------------------------
// An independent reading of verdicts.md.
