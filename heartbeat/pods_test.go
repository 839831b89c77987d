package heartbeat

import (
	"os"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The settings of the Kubernetes rules under test: the defaults.
const (
	ptHungWorkerGrace = 10 * time.Minute
	ptClockSkew       = 2 * time.Second
)

var ptRules = PodPolicy{HungWorkerGrace: ptHungWorkerGrace, ClockSkew: ptClockSkew}

// ptWorker is a worker row of owner name, heartbeat age old, created
// created ago.
func ptWorker(id, name string, age, created time.Duration) AppStatus {
	r := ltRow(id, name, "worker", ltWorkerTTL, age)
	r.PulpCreated = ltNow.Add(-created)
	return r
}

func ptAt(ago time.Duration) *time.Time {
	t := ltNow.Add(-ago)
	return &t
}

// ptPodStart is when the kubelet accepted every test pod: before its rows.
const ptPodStart = 3 * time.Hour

// ptRunning is a running, ready pod, as the kubelet reports it, whose worker
// container started started ago after restarts restarts.
func ptRunning(name string, started time.Duration, restarts int32) Pod {
	c := &Container{Name: "worker", Running: true, StartedAt: ptAt(started), Restarts: restarts}
	if restarts > 0 {
		c.LastTerminated = &Termination{Reason: "Error", ExitCode: 1, FinishedAt: ptAt(started + time.Second)}
		c.FinishedAt = c.LastTerminated.FinishedAt
	}
	return Pod{Name: name, UID: "uid-" + name, Phase: "Running", Ready: true, ContainersReady: true, StartTime: ptAt(ptPodStart), Container: c}
}

// ptWith is p changed by f.
func ptWith(p Pod, f func(*Pod)) Pod {
	f(&p)
	return p
}

// ptNodeLost is p as the node lifecycle controller leaves it ~40 s after its
// node stopped reporting: Ready False (MarkPodsNotReady), phase and container
// status as the kubelet last reported them.
func ptNodeLost(p Pod) Pod {
	return ptWith(p, func(p *Pod) { p.Ready = false })
}

// ptTaintEvicted is p as the taint manager leaves it ~300 s after: also
// DisruptionTarget DeletionByTaintManager and a deletion timestamp.
func ptTaintEvicted(p Pod) Pod {
	return ptWith(ptNodeLost(p), func(p *Pod) { p.Disruption, p.Terminating = "DeletionByTaintManager", true })
}

// ptEnded is p whose worker container's incarnation ended ago ago with
// reason and exit code, not restarted (yet).
func ptEnded(p Pod, ago time.Duration, reason string, code int32) Pod {
	return ptWith(p, func(p *Pod) {
		c := *p.Container
		c.Running, c.StartedAt = false, nil
		c.Terminated = &Termination{Reason: reason, ExitCode: code, FinishedAt: ptAt(ago)}
		c.FinishedAt = c.Terminated.FinishedAt
		p.Container, p.Ready, p.ContainersReady = &c, false, false
	})
}

// ptLive is the live worker every trusted view needs.
var (
	ptLiveRow = ptWorker("live", "1@live", time.Second, time.Hour)
	ptLivePod = ptRunning("live", 2*time.Hour, 0)
)

// ptSeen remembers every name as seen by an earlier list.
func ptSeen(names ...string) map[string]SeenPod {
	out := map[string]SeenPod{}
	for _, n := range names {
		out[n] = SeenPod{UID: "uid-" + n, Seen: ltNow.Add(-time.Minute)}
	}
	return out
}

type podCase struct {
	name     string
	row      AppStatus
	pods     []Pod
	seen     []string // names an earlier list showed
	noLive   bool     // leave out the live worker (and its pod)
	livePod  bool     // keep the live worker's row but not its pod
	extra    []AppStatus
	want     Liveness
	wantRule PodRule
}

func (tc podCase) run(t *testing.T) {
	t.Helper()
	rows := append([]AppStatus{tc.row}, tc.extra...)
	pods := tc.pods
	if !tc.noLive {
		rows = append(rows, ptLiveRow)
		if !tc.livePod {
			pods = append(pods, ptLivePod)
		}
	}
	f := NewFleet(rows, ltNow, ltGrace).WithPods(NewPodView(pods, ptSeen(append(tc.seen, "live")...)), ptRules)
	_, live, ok := f.Row(tc.row.ID)
	require.True(t, ok)
	require.Equal(t, tc.want, live, "row liveness")
	o := f.Owner(tc.row.Name)
	require.Equal(t, tc.want, o.Liveness, "owner liveness")
	if tc.wantRule == "" {
		require.Nil(t, o.Kubernetes)
		return
	}
	require.NotNil(t, o.Kubernetes)
	require.Equal(t, tc.wantRule, o.Kubernetes.Rule)
}

func podRun(t *testing.T, cases []podCase) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.run(t)
		})
	}
}

const (
	ptLate = ltWorkerTTL + 10*time.Second          // past ttl, within grace
	ptDead = ltWorkerTTL + ltGrace + 2*time.Minute // past ttl + grace, within hung_worker_grace
)

func ptAPI(r AppStatus) AppStatus {
	r.AppType = "api"
	return r
}

// Rule 2: absence proves death only for a pod an earlier list showed, in a
// trusted view.
func TestPodRulesAbsence(t *testing.T) {
	t.Parallel()
	podRun(t, []podCase{
		{name: "seen pod gone, late: dead now", row: ptWorker("r", "1@w", ptLate, time.Hour), seen: []string{"w"}, want: Dead, wantRule: PodGone},
		{name: "seen pod gone, already dead", row: ptWorker("r", "1@w", ptDead, time.Hour), seen: []string{"w"}, want: Dead, wantRule: PodGone},
		{name: "never seen (VM worker, relabelled pod): left alone", row: ptWorker("r", "1@vm", ptLate, time.Hour), want: Late, wantRule: PodNotInView},
		{name: "fresh heartbeat, no pod: outside the view, report only", row: ptWorker("r", "1@w", time.Second, time.Hour), seen: []string{"w"}, want: Alive, wantRule: PodOutsideView},
		{name: "a live worker has no pod: view not trusted", row: ptWorker("r", "1@w", ptLate, time.Hour), seen: []string{"w"}, livePod: true, want: Late, wantRule: PodNotInView},
		{name: "no worker alive: a slow database, not pods gone", row: ptWorker("r", "1@w", ptLate, time.Hour), seen: []string{"w"}, noLive: true, want: Late, wantRule: PodNotInView},
		{name: "a late worker never seen (a VM) leaves the others their evidence", row: ptWorker("r", "1@w", ptLate, time.Hour), seen: []string{"w"},
			extra: []AppStatus{ptWorker("vm", "1@vm", ptLate, time.Hour)}, want: Dead, wantRule: PodGone},
		{name: "a dead worker never seen does not (old rows of a rolling restart)", row: ptWorker("r", "1@w", ptLate, time.Hour), seen: []string{"w"},
			extra: []AppStatus{ptWorker("old", "1@old", ptDead, time.Hour)}, want: Dead, wantRule: PodGone},
		{name: "hostname may be a truncated pod name", row: ptWorker("r", "1@w-truncat", ptLate, time.Hour), seen: []string{"w-truncat"}, pods: []Pod{ptRunning("w-truncated-name", time.Hour, 0)}, want: Late, wantRule: PodNotInView},
		{name: "api row, seen pod gone", row: ptAPI(ptWorker("r", "7@api", ptLate, time.Hour)), seen: []string{"api"}, want: Dead, wantRule: PodGone},
		{name: "content row: not covered by the selector", row: func() AppStatus {
			r := ptWorker("r", "7@content", ptLate, time.Hour)
			r.AppType = "content"
			return r
		}(), seen: []string{"content"}, want: Late},
		{name: "not a pid@host name", row: ptWorker("r", "immediate-x", ptLate, time.Hour), want: Late},
	})
}

// Rule 5: an incarnation the kubelet reports ended makes its rows dead at
// once, whatever their heartbeat age.
func TestPodRulesEndedIncarnation(t *testing.T) {
	t.Parallel()
	oom := func(p Pod) Pod { return ptEnded(p, 3*time.Second, "OOMKilled", 137) }
	restartedOOM := func(started time.Duration) Pod {
		return ptWith(ptRunning("w", started, 1), func(p *Pod) {
			p.Container.LastTerminated = &Termination{Reason: "OOMKilled", ExitCode: 137, FinishedAt: ptAt(started + time.Second)}
		})
	}
	podRun(t, []podCase{
		{name: "OOM-killed 3 s ago, heartbeat 8 s ago (alive): dead at once", row: ptWorker("r", "1@w", 8*time.Second, time.Hour), pods: []Pod{oom(ptRunning("w", 2*time.Hour, 0))}, want: Dead, wantRule: PodContainerEnded},
		{name: "OOM-killed and restarted 2 s ago, heartbeat 8 s ago: dead at once", row: ptWorker("r", "1@w", 8*time.Second, time.Hour), pods: []Pod{restartedOOM(2 * time.Second)}, want: Dead, wantRule: PodRestarted},
		{name: "restarted, late: dead now", row: ptWorker("r", "1@w", ptLate, time.Hour), pods: []Pod{ptRunning("w", ptLate-5*time.Second, 1)}, want: Dead, wantRule: PodRestarted},
		{name: "waiting after an end (CrashLoopBackOff): dead at once", row: ptWorker("r", "1@w", 8*time.Second, time.Hour),
			pods: []Pod{ptWith(ptRunning("w", 2*time.Hour, 1), func(p *Pod) {
				p.Container.Running, p.Container.StartedAt = false, nil
				p.Container.LastTerminated.FinishedAt = ptAt(3 * time.Second)
			})}, want: Dead, wantRule: PodContainerEnded},
		{name: "evicted: phase Failed reason Evicted, containers terminated", row: ptWorker("r", "1@w", 8*time.Second, time.Hour),
			pods: []Pod{ptWith(ptEnded(ptRunning("w", 2*time.Hour, 0), 3*time.Second, "Error", 137), func(p *Pod) { p.Phase, p.Reason = "Failed", "Evicted" })}, want: Dead, wantRule: PodContainerEnded},
		{name: "pod Succeeded", row: ptWorker("r", "1@w", 8*time.Second, time.Hour),
			pods: []Pod{ptWith(ptEnded(ptRunning("w", 2*time.Hour, 0), 3*time.Second, "Completed", 0), func(p *Pod) { p.Phase = "Succeeded" })}, want: Dead, wantRule: PodContainerEnded},
		{name: "the successor's row is not the ended incarnation's", row: ptWorker("r", "1@w", time.Second, 20*time.Second), pods: []Pod{restartedOOM(25 * time.Second)}, want: Alive, wantRule: PodSeen},
		{name: "row created within the margin before the end: no proof", row: ptWorker("r", "1@w", 8*time.Second, 4*time.Second), pods: []Pod{oom(ptRunning("w", 2*time.Hour, 0))}, want: Alive, wantRule: PodSeen},
		{name: "heartbeat after the end: not the ended incarnation's", row: ptWorker("r", "1@w", 0, time.Hour), pods: []Pod{oom(ptRunning("w", 2*time.Hour, 0))}, want: Alive, wantRule: PodSeen},
		{name: "never restarted, started after the row: an earlier pod of the name, no proof", row: ptWorker("r", "1@w", ptLate, time.Hour),
			pods: []Pod{ptWith(ptRunning("w", 30*time.Second, 0), func(p *Pod) { p.StartTime = ptAt(40 * time.Second) })}, want: Late, wantRule: PodSeen},
		{name: "row created before the pod started: an earlier pod of the name, no proof", row: ptWorker("r", "1@w", ptLate, 4*time.Hour), pods: []Pod{ptRunning("w", time.Minute, 1)}, want: Late, wantRule: PodSeen},
		{name: "no pod start time: no proof", row: ptWorker("r", "1@w", ptLate, time.Hour), pods: []Pod{ptWith(ptRunning("w", 20*time.Second, 1), func(p *Pod) { p.StartTime = nil })}, want: Late, wantRule: PodSeen},
		{name: "version 4 row id, no creation time: no proof", row: func() AppStatus {
			r := ptWorker("r", "1@w", ptLate, time.Hour)
			r.PulpCreated = time.Time{}
			return r
		}(), pods: []Pod{ptRunning("w", 20*time.Second, 1)}, want: Late, wantRule: PodSeen},
		{name: "end without a time (ContainerStatusUnknown): no proof", row: ptWorker("r", "1@w", ptLate, time.Hour),
			pods: []Pod{ptWith(ptRunning("w", 2*time.Hour, 1), func(p *Pod) {
				p.Container.Running, p.Container.StartedAt = false, nil
				p.Container.LastTerminated = &Termination{Reason: "ContainerStatusUnknown", ExitCode: 137}
			})}, want: Late, wantRule: PodSeen},
		{name: "untrusted view (wrong context): restart not applied", row: ptWorker("r", "1@w", ptLate, time.Hour), pods: []Pod{ptRunning("w", 10*time.Second, 1)}, livePod: true, want: Late, wantRule: PodSeen},
		{name: "api row: the API container's restart", row: ptAPI(ptWorker("r", "7@api", 5*time.Second, time.Hour)),
			pods: []Pod{ptWith(ptRunning("api", 2*time.Hour, 0), func(p *Pod) { p.API, p.Container = ptRunning("api", 2*time.Second, 1).Container, nil })}, want: Dead, wantRule: PodRestarted},
		{name: "api row: a sidecar-free worker container's restart says nothing", row: ptAPI(ptWorker("r", "7@api", 5*time.Second, time.Hour)),
			pods: []Pod{ptRunning("api", 2*time.Second, 1)}, want: Alive, wantRule: PodSeen},
	})
}

// Rule 1: only a pod that could be running holds a worker alive.
func TestPodRulesHold(t *testing.T) {
	t.Parallel()
	running := ptRunning("w", 2*time.Hour, 0)
	podRun(t, []podCase{
		{name: "could run, running since before its row: held", row: ptWorker("r", "1@w", ptDead, time.Hour), pods: []Pod{running}, want: Late, wantRule: PodAliveNotHeartbeating},
		{name: "restarts before the row count for nothing", row: ptWorker("r", "1@w", ptDead, time.Hour), pods: []Pod{ptRunning("w", 2*time.Hour, 4)}, want: Late, wantRule: PodAliveNotHeartbeating},
		{name: "started within the margin after the row", row: ptWorker("r", "1@w", ptDead, time.Hour), pods: []Pod{ptRunning("w", time.Hour-time.Second, 0)}, want: Late, wantRule: PodAliveNotHeartbeating},
		{name: "at exactly hung_worker_grace", row: ptWorker("r", "1@w", ltWorkerTTL+ltGrace+ptHungWorkerGrace, time.Hour), pods: []Pod{running}, want: Late, wantRule: PodAliveNotHeartbeating},
		{name: "past hung_worker_grace: dead", row: ptWorker("r", "1@w", ltWorkerTTL+ltGrace+ptHungWorkerGrace+1, time.Hour), pods: []Pod{running}, want: Dead, wantRule: PodHungTooLong},
		{name: "node crash at 40 s: Ready False, phase Running: no hold", row: ptWorker("r", "1@w", ptDead, time.Hour), pods: []Pod{ptNodeLost(running)}, want: Dead, wantRule: PodSeen},
		{name: "node crash at 300 s: deletionTimestamp and DisruptionTarget: no hold", row: ptWorker("r", "1@w", ptDead, time.Hour), pods: []Pod{ptTaintEvicted(running)}, want: Dead, wantRule: PodSeen},
		{name: "DisruptionTarget alone: no hold", row: ptWorker("r", "1@w", ptDead, time.Hour), pods: []Pod{ptWith(running, func(p *Pod) { p.Disruption = "EvictionByEvictionAPI" })}, want: Dead, wantRule: PodSeen},
		{name: "deletion timestamp alone: no hold", row: ptWorker("r", "1@w", ptDead, time.Hour), pods: []Pod{ptWith(running, func(p *Pod) { p.Terminating = true })}, want: Dead, wantRule: PodSeen},
		{name: "ContainersReady False: no hold", row: ptWorker("r", "1@w", ptDead, time.Hour), pods: []Pod{ptWith(running, func(p *Pod) { p.ContainersReady = false })}, want: Dead, wantRule: PodSeen},
		{name: "phase Failed by PodGC, stale running status: no hold", row: ptWorker("r", "1@w", ptDead, time.Hour), pods: []Pod{ptWith(running, func(p *Pod) { p.Phase, p.Disruption = "Failed", "DeletionByPodGC" })}, want: Dead, wantRule: PodSeen},
		{name: "phase Pending: no hold", row: ptWorker("r", "1@w", ptDead, time.Hour), pods: []Pod{ptWith(running, func(p *Pod) { p.Phase = "Pending" })}, want: Dead, wantRule: PodSeen},
		{name: "node crash, row only late: stays late, as without Kubernetes", row: ptWorker("r", "1@w", ptLate, time.Hour), pods: []Pod{ptNodeLost(running)}, want: Late, wantRule: PodSeen},
		{name: "not PID 1: the container proves nothing of that process", row: ptWorker("r", "7@w", ptDead, time.Hour), pods: []Pod{running}, want: Dead, wantRule: PodSeen},
		{name: "no container status", row: ptWorker("r", "1@w", ptDead, time.Hour), pods: []Pod{ptWith(running, func(p *Pod) { p.Container = nil })}, want: Dead, wantRule: PodSeen},
		{name: "version 4 row id: never held", row: func() AppStatus {
			r := ptWorker("r", "1@w", ptDead, time.Hour)
			r.PulpCreated = time.Time{}
			return r
		}(), pods: []Pod{running}, want: Dead, wantRule: PodSeen},
	})
}

func TestPodRulesSameNameRestart(t *testing.T) {
	t.Parallel()
	// The worker 1@w died 40 s ago; its container restarted 35 s ago under the
	// same name and the new process already heartbeats in a row of its own.
	old := ptWorker("old", "1@w", 40*time.Second, time.Hour)
	successor := ptWorker("new", "1@w", time.Second, 30*time.Second)
	f := NewFleet([]AppStatus{old, successor}, ltNow, ltGrace).WithPods(NewPodView([]Pod{ptRunning("w", 35*time.Second, 1)}, nil), ptRules)
	_, live, _ := f.Row("old")
	require.Equal(t, Dead, live, "the old incarnation's row is dead at once")
	_, live, _ = f.Row("new")
	require.Equal(t, Alive, live)
	o := f.Owner("1@w")
	require.Equal(t, Alive, o.Liveness)
	require.Equal(t, PodSeen, o.Kubernetes.Rule)
	require.Equal(t, int32(1), o.Kubernetes.Container.Restarts)
	// The old row was only late by its heartbeat, so the mass-death guard
	// sees the death Kubernetes proved, not a superseded row: pod evidence
	// never makes the guard see fewer deaths than the heartbeats do.
	rows := f.WorkerRows()
	require.Len(t, rows, 2)
	require.Equal(t, WorkerRow{ID: "new", Name: "1@w", Live: true}, rows[0])
	require.False(t, rows[1].Live)
	require.False(t, rows[1].Superseded, "late by its heartbeat: not a restart the guard leaves out")
	require.True(t, rows[1].PodProven)
}

func TestPodRulesNilViewChangesNothing(t *testing.T) {
	t.Parallel()
	rows := []AppStatus{ptWorker("r", "1@w", 40*time.Second, time.Hour), ptLiveRow}
	require.Equal(t, NewFleet(rows, ltNow, ltGrace), NewFleet(rows, ltNow, ltGrace).WithPods(nil, ptRules))
	var none *Fleet
	require.Nil(t, none.WithPods(NewPodView(nil, nil), ptRules))
}

// The decision functions, called directly.
func TestPodDecisionFunctions(t *testing.T) {
	t.Parallel()
	ready := ptRunning("w", 2*time.Hour, 0)
	for name, tc := range map[string]struct {
		pod  Pod
		want bool
	}{
		"running and ready":          {ready, true},
		"Ready False":                {ptNodeLost(ready), false},
		"taint-evicted":              {ptTaintEvicted(ready), false},
		"ContainersReady False":      {ptWith(ready, func(p *Pod) { p.ContainersReady = false }), false},
		"phase Pending":              {ptWith(ready, func(p *Pod) { p.Phase = "Pending" }), false},
		"phase Failed (PodGC)":       {ptWith(ready, func(p *Pod) { p.Phase, p.Disruption = "Failed", "DeletionByPodGC" }), false},
		"DisruptionTarget, eviction": {ptWith(ready, func(p *Pod) { p.Disruption = "EvictionByEvictionAPI" }), false},
	} {
		require.Equal(t, tc.want, tc.pod.CouldRun(), name)
	}

	row := ptWorker("r", "1@w", 8*time.Second, time.Hour)
	rule, ok := endedRule(row, ptEnded(ready, 3*time.Second, "OOMKilled", 137), ptClockSkew)
	require.True(t, ok)
	require.Equal(t, PodContainerEnded, rule)
	rule, ok = endedRule(row, ptRunning("w", 2*time.Second, 1), ptClockSkew)
	require.True(t, ok)
	require.Equal(t, PodRestarted, rule)
	_, ok = endedRule(row, ready, ptClockSkew)
	require.False(t, ok, "running, never restarted: no end reported")
	_, ok = endedRule(ptAPI(row), ptRunning("w", 2*time.Second, 1), ptClockSkew)
	require.False(t, ok, "an api row is judged by the API container")

	dead := ptWorker("r", "1@w", ptDead, time.Hour)
	require.True(t, holdsLife(dead, ready, ltNow, ptClockSkew))
	require.False(t, holdsLife(dead, ptNodeLost(ready), ltNow, ptClockSkew))
	require.False(t, holdsLife(dead, ptRunning("w", 50*time.Minute, 1), ltNow, ptClockSkew), "started after the row")
	require.False(t, holdsLife(ptAPI(dead), ready, ltNow, ptClockSkew), "no API container")

	end, _, ok := ready.Container.EndedBefore()
	require.False(t, ok)
	require.Zero(t, end)
}

// TestWorkerRowsPodProven: a death the pods prove (the pod gone, the
// container restarted since the last heartbeat) is marked on the row, for a
// row dead by its heartbeat long ago as for one the rules make dead; a row
// whose pod runs on is not.
func TestWorkerRowsPodProven(t *testing.T) {
	t.Parallel()
	rows := []AppStatus{
		ptLiveRow,
		ptWorker("gone", "1@gone", time.Hour, 2*time.Hour),
		ptWorker("late-gone", "1@late-gone", 40*time.Second, 2*time.Hour),
		ptWorker("restarted", "1@restarted", time.Hour, 2*time.Hour),
		ptWorker("hung", "1@hung", time.Hour, 2*time.Hour),
	}
	pods := NewPodView([]Pod{ptLivePod, ptRunning("restarted", 10*time.Minute, 1), ptRunning("hung", 3*time.Hour, 0)}, ptSeen("gone", "late-gone"))
	proven := map[string]bool{}
	for _, r := range NewFleet(rows, ltNow, ltGrace).WithPods(pods, ptRules).WorkerRows() {
		proven[r.ID] = r.PodProven
	}
	require.Equal(t, map[string]bool{ptLiveRow.ID: false, "gone": true, "late-gone": true, "restarted": true, "hung": false}, proven)
	for _, r := range NewFleet(rows, ltNow, ltGrace).WorkerRows() {
		require.False(t, r.PodProven, "no pods, no proof: %s", r.ID)
	}
}

// TestPodRulesListsEveryRule: PodRules holds every PodRule constant of
// pods.go once, in the order of their names.
func TestPodRulesListsEveryRule(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile("pods.go")
	require.NoError(t, err)
	var declared []string
	for _, m := range regexp.MustCompile(`(?m)^\t\w+ PodRule = "([^"]+)"`).FindAllStringSubmatch(string(src), -1) {
		declared = append(declared, m[1])
	}
	require.Len(t, declared, 9)
	var listed []string
	for _, r := range PodRules {
		listed = append(listed, string(r))
	}
	require.True(t, slices.IsSorted(listed), "in the order of their names: %v", listed)
	slices.Sort(declared)
	require.Equal(t, declared, listed)
}
