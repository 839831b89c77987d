package judge

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/lock-reaper/lock-reaper/heartbeat"
)

// jbFleet builds a deterministic snapshot of about n holdings: a busy fleet
// of workers and API processes, each task holding its task lock, an
// exclusive repository lock and a shared domain lock; some tasks finished
// without releasing, some workers dead with their locks, some leaked locks,
// and a few remembered suspects.
func jbFleet(n int) Snapshot {
	rng := rand.New(rand.NewPCG(uint64(n), 42))
	now := jtNow
	snap := Snapshot{Now: now, Tasks: map[string]Task{}, Suspects: map[SuspectKey]Suspect{}, FullScan: true}
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
		r := heartbeat.AppStatus{ID: newID(), Name: name, AppType: "worker", TTL: jtWorkerTTL, LastHeartbeat: now.Add(-age)}
		snap.AppStatuses = append(snap.AppStatuses, r)
		procs = append(procs, proc{r.ID, r.Name})
	}
	for i := range max(2, workers/10) {
		r := heartbeat.AppStatus{ID: newID(), Name: fmt.Sprintf("1@pulp-api-%d", i), AppType: "api", TTL: jtAPITTL, LastHeartbeat: now.Add(-time.Second)}
		snap.AppStatuses = append(snap.AppStatuses, r)
		procs = append(procs, proc{r.ID, r.Name})
	}
	domains := 10
	add := func(h Holding) { snap.Holdings = append(snap.Holdings, h) }
	for len(snap.Holdings) < n {
		p := procs[rng.IntN(len(procs))]
		domain := fmt.Sprintf("prn:core.domain:%s", jtID(100000+rng.IntN(domains)))
		repo := fmt.Sprintf("prn:rpm.rpmrepository:%s", jtID(200000+len(snap.Tasks)))
		t := Task{ID: newID(), Name: "pulp_rpm.app.tasks.synchronize", State: StateRunning, AppLockID: p.id, Reserved: []string{repo, "shared:" + domain}}
		switch rng.IntN(20) {
		case 0: // finished, not released
			at := now.Add(-time.Duration(rng.IntN(3600)) * time.Second)
			t.State, t.FinishedAt = StateCompleted, &at
		case 1: // acquired, not yet claimed
			t.State, t.AppLockID = StateWaiting, ""
		}
		snap.Tasks[t.ID] = t
		add(Holding{Key: TaskKeyPrefix + t.ID, Kind: KindTask, Owner: p.name, Registered: true})
		add(Holding{Key: ResourceKeyPrefix + repo, Kind: KindExclusive, Owner: p.name, Registered: true})
		add(Holding{Key: ResourceKeyPrefix + domain, Kind: KindShared, Owner: p.name, Registered: true})
		if rng.IntN(50) == 0 { // a leaked lock of a worker long gone
			leak := fmt.Sprintf("prn:file.filerepository:%s", t.ID)
			add(Holding{Key: ResourceKeyPrefix + leak, Kind: KindExclusive, Owner: "1@pulp-worker-gone"})
		}
		if rng.IntN(100) == 0 {
			snap.Suspects[SuspectKey{Key: TaskKeyPrefix + t.ID, Owner: p.name}] = Suspect{Verdict: VerdictUnclaimed, FirstSeen: now.Add(-5 * time.Minute)}
		}
	}
	rng.Shuffle(len(snap.Holdings), func(i, j int) { snap.Holdings[i], snap.Holdings[j] = snap.Holdings[j], snap.Holdings[i] })
	return snap
}

// BenchmarkJudge measures judging with every holding listed, as explain
// and locks do, at fleet sizes; compare runs with benchstat
// (go test -run '^$' -bench Judge -count 10).
func BenchmarkJudge(b *testing.B) {
	benchmarkJudge(b, All, func(plan Plan) int { return len(plan.Holdings) })
}

// BenchmarkJudgeFindings is BenchmarkJudge as a pass judges: the plan lists
// the findings only and counts the healthy holdings.
func BenchmarkJudgeFindings(b *testing.B) {
	benchmarkJudge(b, Findings, func(plan Plan) int {
		total := 0
		for _, c := range plan.ByVerdict {
			total += c
		}
		return total
	})
}

// benchmarkJudge runs judge on fleets of three sizes; judged says how many
// holdings a plan accounts for, which must be all of them.
func benchmarkJudge(b *testing.B, judge func(Snapshot, Policy) Plan, judged func(Plan) int) {
	for _, size := range []struct {
		name string
		n    int
	}{{"1k", 1_000}, {"10k", 10_000}, {"100k", 100_000}} {
		snap := jbFleet(size.n)
		p := jtPolicy()
		p.MaxReleases = size.n
		b.Run("holdings="+size.name, func(b *testing.B) {
			b.ReportAllocs()
			var plan Plan
			for b.Loop() {
				plan = judge(snap, p)
			}
			if n := judged(plan); n != len(snap.Holdings) {
				b.Fatalf("judged %d of %d holdings", n, len(snap.Holdings))
			}
			b.ReportMetric(float64(len(snap.Holdings)), "holdings/op")
		})
	}
}

// jbOneOwner is the incident of pulp-protocol.md §5.7 at scale: one dead
// worker left every lock it ever took, about n holdings in all.
func jbOneOwner(n int) Snapshot {
	w := jtNewWorld()
	row := w.worker("1@pulp-worker-dead", time.Hour)
	for len(w.snap.Holdings) < n {
		id := w.task(StateRunning, row, fmt.Sprintf("prn:rpm.rpmrepository:%s", jtID(200000+len(w.snap.Tasks))), "shared:prn:core.domain:"+jtID(100000))
		w.acquire(id, "1@pulp-worker-dead")
	}
	return w.snap
}

// BenchmarkJudgeOneOwner judges the holdings of a single owner: resource
// holdings are matched against that owner's task locks.
func BenchmarkJudgeOneOwner(b *testing.B) {
	for _, size := range []struct {
		name string
		n    int
	}{{"1k", 1_000}, {"10k", 10_000}} {
		snap := jbOneOwner(size.n)
		p := jtPolicy()
		p.MaxReleases = size.n
		p.Force = true
		b.Run("holdings="+size.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				All(snap, p)
			}
		})
	}
}
