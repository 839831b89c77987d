package judgeprop

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/lock-reaper/lock-reaper/judge"
)

// The fixtures the property tests share with the judge's own tests, which
// they cannot import: the judge's tests are in its module, these in the
// program's.

// jtNow is the database clock of every snapshot; ltNow is the same clock
// under the name the liveness properties use.
var jtNow = time.Date(2026, 7, 24, 12, 0, 0, 0, time.UTC)

var ltNow = jtNow

const (
	jtWorkerTTL = 30 * time.Second
	jtAPITTL    = 120 * time.Second
	ltGrace     = 30 * time.Second
)

var ptRules = judge.PodRules{HungWorkerGrace: judge.DefaultHungWorkerGrace, ClockSkew: judge.DefaultClockSkew}

// jtID returns the n-th deterministic canonical task/row uuid.
func jtID(n int) string {
	return fmt.Sprintf("%08x-0000-4000-8000-%012x", n, n)
}

func jtHasGuard(plan judge.Plan, name string) bool {
	for _, g := range plan.Guards {
		if g.Name == name {
			return true
		}
	}
	return false
}

// ptWorker is a worker row whose heartbeat is age old, created created ago.
func ptWorker(id, name string, age, created time.Duration) judge.AppStatus {
	return judge.AppStatus{ID: id, Name: name, AppType: "worker", TTL: jtWorkerTTL, LastHeartbeat: ltNow.Add(-age), PulpCreated: ltNow.Add(-created)}
}

func ptAt(ago time.Duration) *time.Time {
	t := ltNow.Add(-ago)
	return &t
}

// jbOneOwner is the incident of pulp-protocol.md §5.7 at scale: one dead
// worker left every lock it ever took, about n holdings in all.
func jbOneOwner(n int) judge.Snapshot {
	row := judge.AppStatus{ID: jtID(1), Name: "1@pulp-worker-dead", AppType: "worker", TTL: jtWorkerTTL, LastHeartbeat: jtNow.Add(-time.Hour)}
	snap := judge.Snapshot{Now: jtNow, Tasks: map[string]judge.Task{}, AppStatuses: []judge.AppStatus{row}, FullScan: true}
	domain := "prn:core.domain:" + jtID(100000)
	for len(snap.Holdings) < n {
		id := jtID(2 + len(snap.Tasks))
		repo := fmt.Sprintf("prn:rpm.rpmrepository:%s", jtID(200000+len(snap.Tasks)))
		snap.Tasks[id] = judge.Task{ID: id, Name: "pulp_rpm.app.tasks.synchronize", State: judge.StateRunning, AppLockID: row.ID, Reserved: []string{repo, "shared:" + domain}}
		for _, h := range []judge.Holding{
			{Key: judge.TaskKeyPrefix + id, Kind: judge.KindTask},
			{Key: judge.ResourceKeyPrefix + repo, Kind: judge.KindExclusive},
			{Key: judge.ResourceKeyPrefix + domain, Kind: judge.KindShared},
		} {
			h.Owner, h.Registered = row.Name, true
			snap.Holdings = append(snap.Holdings, h)
		}
	}
	return snap
}

// jbFleet builds a deterministic snapshot of about n holdings: a busy fleet
// of workers and API processes, each task holding its task lock, an
// exclusive repository lock and a shared domain lock; some tasks finished
// without releasing, some workers dead with their locks, some leaked locks,
// and a few remembered suspects.
func jbFleet(n int) judge.Snapshot {
	rng := rand.New(rand.NewPCG(uint64(n), 42))
	now := jtNow
	snap := judge.Snapshot{Now: now, Tasks: map[string]judge.Task{}, Suspects: map[judge.SuspectKey]judge.Suspect{}, FullScan: true}
	next := 0
	newID := func() string { next++; return jtID(next) }

	type proc struct{ id, name string }
	var procs []proc
	workers := max(8, n/200)
	for i := range workers {
		name := fmt.Sprintf("%d@pulp-worker-%d", 1+i%7, i)
		age := time.Duration(rng.IntN(10_000)) * time.Millisecond
		if i%20 == 0 { // 5% of the fleet is dead
			age = time.Duration(5+rng.IntN(120)) * time.Minute
		}
		r := judge.AppStatus{ID: newID(), Name: name, AppType: "worker", TTL: jtWorkerTTL, LastHeartbeat: now.Add(-age)}
		snap.AppStatuses = append(snap.AppStatuses, r)
		procs = append(procs, proc{r.ID, r.Name})
	}
	for i := range max(2, workers/10) {
		r := judge.AppStatus{ID: newID(), Name: fmt.Sprintf("1@pulp-api-%d", i), AppType: "api", TTL: jtAPITTL, LastHeartbeat: now.Add(-time.Second)}
		snap.AppStatuses = append(snap.AppStatuses, r)
		procs = append(procs, proc{r.ID, r.Name})
	}
	domains := 10
	add := func(h judge.Holding) { snap.Holdings = append(snap.Holdings, h) }
	for len(snap.Holdings) < n {
		p := procs[rng.IntN(len(procs))]
		domain := fmt.Sprintf("prn:core.domain:%s", jtID(100000+rng.IntN(domains)))
		repo := fmt.Sprintf("prn:rpm.rpmrepository:%s", jtID(200000+len(snap.Tasks)))
		t := judge.Task{ID: newID(), Name: "pulp_rpm.app.tasks.synchronize", State: judge.StateRunning, AppLockID: p.id, Reserved: []string{repo, "shared:" + domain}}
		switch rng.IntN(20) {
		case 0: // finished, not released
			at := now.Add(-time.Duration(rng.IntN(3600)) * time.Second)
			t.State, t.FinishedAt = judge.StateCompleted, &at
		case 1: // acquired, not yet claimed
			t.State, t.AppLockID = judge.StateWaiting, ""
		}
		snap.Tasks[t.ID] = t
		add(judge.Holding{Key: judge.TaskKeyPrefix + t.ID, Kind: judge.KindTask, Owner: p.name, Registered: true})
		add(judge.Holding{Key: judge.ResourceKeyPrefix + repo, Kind: judge.KindExclusive, Owner: p.name, Registered: true})
		add(judge.Holding{Key: judge.ResourceKeyPrefix + domain, Kind: judge.KindShared, Owner: p.name, Registered: true})
		if rng.IntN(50) == 0 { // a leaked lock of a worker long gone
			leak := fmt.Sprintf("prn:file.filerepository:%s", t.ID)
			add(judge.Holding{Key: judge.ResourceKeyPrefix + leak, Kind: judge.KindExclusive, Owner: "1@pulp-worker-gone"})
		}
		if rng.IntN(100) == 0 {
			snap.Suspects[judge.SuspectKey{Key: judge.TaskKeyPrefix + t.ID, Owner: p.name}] = judge.Suspect{Verdict: judge.VerdictUnclaimed, FirstSeen: now.Add(-5 * time.Minute)}
		}
	}
	rng.Shuffle(len(snap.Holdings), func(i, j int) { snap.Holdings[i], snap.Holdings[j] = snap.Holdings[j], snap.Holdings[i] })
	return snap
}
