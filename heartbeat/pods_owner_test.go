package heartbeat

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Trust per owner: an owner the view cannot see keeps the heartbeat rules,
// and turns pod evidence off for nobody else. The view must still be
// anchored: some alive row's pod is in it.
func TestPodRulesTrustPerOwner(t *testing.T) {
	t.Parallel()
	// A hostNetwork worker names the node, not its pod (the pod shares the
	// node's UTS namespace); a VM worker names its VM.
	hostNet := ptWorker("hn", "1@node-1", time.Second, time.Hour)
	vm := ptWorker("vm", "1@vm-7", time.Second, time.Hour)
	fresh := ptWorker("new", "1@w-new", time.Second, time.Second) // its pod created after the list
	restarted := ptRunning("w", 10*time.Second, 1)
	podRun(t, []podCase{
		{name: "hostNetwork owner alive without a pod: the others' restart still proves", row: ptWorker("r", "1@w", ptLate, time.Hour),
			pods: []Pod{restarted}, extra: []AppStatus{hostNet}, want: Dead, wantRule: PodRestarted},
		{name: "VM owner alive: the others' pod-gone still proves", row: ptWorker("r", "1@w", ptLate, time.Hour), seen: []string{"w"},
			extra: []AppStatus{vm}, want: Dead, wantRule: PodGone},
		{name: "pod created a second ago, not yet listed: the others keep their evidence", row: ptWorker("r", "1@w", 8*time.Second, time.Hour),
			pods: []Pod{ptEnded(ptRunning("w", 2*time.Hour, 0), 3*time.Second, "OOMKilled", 137)}, extra: []AppStatus{fresh}, want: Dead, wantRule: PodContainerEnded},
		{name: "the hostNetwork owner itself, alive: outside the view", row: hostNet, want: Alive, wantRule: PodOutsideView},
		{name: "the hostNetwork owner itself, late: heartbeat rules", row: ptWorker("hn", "1@node-1", ptLate, time.Hour), want: Late, wantRule: PodNotInView},
		{name: "the hostNetwork owner itself, dead: heartbeat rules", row: ptWorker("hn", "1@node-1", ptDead, time.Hour), want: Dead, wantRule: PodNotInView},
		{name: "no anchor: the only alive row has no pod (another cluster's list)", row: ptWorker("r", "1@w", ptLate, time.Hour),
			pods: []Pod{restarted}, livePod: true, want: Late, wantRule: PodSeen},
		{name: "no anchor: no row alive (a database too slow to record heartbeats)", row: ptWorker("r", "1@w", ptLate, time.Hour), seen: []string{"w"},
			noLive: true, want: Late, wantRule: PodNotInView},
		{name: "no anchor: a late row's pod in the view is no anchor", row: ptWorker("r", "1@w", ptLate, time.Hour),
			pods: []Pod{restarted, ptRunning("other", time.Hour, 0)}, noLive: true, extra: []AppStatus{ptWorker("o", "1@other", ptLate, time.Hour)}, want: Late, wantRule: PodSeen},
	})
}

// ptTerminal is a pod the kubelet evicted and terminated (TerminatePod):
// phase Failed reason Evicted, DisruptionTarget TerminationByKubelet, its
// worker container terminated ContainerStatusUnknown without any time.
func ptTerminal(name string) Pod {
	return ptWith(ptRunning(name, 2*time.Hour, 0), func(p *Pod) {
		c := *p.Container
		c.Running, c.StartedAt = false, nil
		c.Terminated = &Termination{Reason: "ContainerStatusUnknown", ExitCode: 137}
		p.Container, p.Ready, p.ContainersReady = &c, false, false
		p.Phase, p.Reason, p.Disruption = "Failed", "Evicted", "TerminationByKubelet"
	})
}

// A terminal phase written by the kubelet is a death, on the safe side only.
func TestPodRulesTerminalPhase(t *testing.T) {
	t.Parallel()
	row := ptWorker("r", "1@w", 8*time.Second, time.Hour)
	podRun(t, []podCase{
		{name: "evicted, ContainerStatusUnknown, heartbeat 8 s ago: dead at once", row: row, pods: []Pod{ptTerminal("w")}, want: Dead, wantRule: PodTerminal},
		{name: "Succeeded, terminated without a time", row: row, pods: []Pod{ptWith(ptTerminal("w"), func(p *Pod) { p.Phase, p.Reason, p.Disruption = "Succeeded", "", "" })}, want: Dead, wantRule: PodTerminal},
		{name: "late row, phase Failed without condition", row: ptWorker("r", "1@w", ptLate, time.Hour), pods: []Pod{ptWith(ptTerminal("w"), func(p *Pod) { p.Disruption = "" })}, want: Dead, wantRule: PodTerminal},
		{name: "PodGC, node gone: Failed, DeletionByPodGC, container left running", row: row,
			pods: []Pod{ptWith(ptRunning("w", 2*time.Hour, 0), func(p *Pod) { p.Phase, p.Disruption, p.AnyRunning = "Failed", "DeletionByPodGC", true })}, want: Alive, wantRule: PodSeen},
		{name: "PodGC, node gone, container reported unknown before: DeletionByPodGC", row: row,
			pods: []Pod{ptWith(ptTerminal("w"), func(p *Pod) { p.Disruption = "DeletionByPodGC" })}, want: Alive, wantRule: PodSeen},
		{name: "PodGC, out-of-service node: Failed, terminating, no condition", row: row,
			pods: []Pod{ptWith(ptTerminal("w"), func(p *Pod) { p.Disruption, p.Terminating = "", true })}, want: Alive, wantRule: PodSeen},
		{name: "another container still running (a stale status)", row: row, pods: []Pod{ptWith(ptTerminal("w"), func(p *Pod) { p.AnyRunning = true })}, want: Alive, wantRule: PodSeen},
		{name: "worker container waiting (never initialised)", row: row,
			pods: []Pod{ptWith(ptTerminal("w"), func(p *Pod) { p.Container = &Container{Name: "worker"} })}, want: Alive, wantRule: PodSeen},
		{name: "rejected: no container status", row: row, pods: []Pod{ptWith(ptTerminal("w"), func(p *Pod) { p.Container = nil })}, want: Alive, wantRule: PodSeen},
		{name: "ContainerStatusUnknown on a Running pod: no proof", row: row, pods: []Pod{ptWith(ptTerminal("w"), func(p *Pod) { p.Phase, p.Disruption = "Running", "" })}, want: Alive, wantRule: PodSeen},
		{name: "row of an earlier pod of the name (created before its start)", row: ptWorker("r", "1@w", 8*time.Second, 4*time.Hour), pods: []Pod{ptTerminal("w")}, want: Alive, wantRule: PodSeen},
		{name: "version 4 row id: no proof", row: func() AppStatus {
			r := row
			r.PulpCreated = time.Time{}
			return r
		}(), pods: []Pod{ptTerminal("w")}, want: Alive, wantRule: PodSeen},
		{name: "no pod start time: no proof", row: row, pods: []Pod{ptWith(ptTerminal("w"), func(p *Pod) { p.StartTime = nil })}, want: Alive, wantRule: PodSeen},
		{name: "view not anchored: no proof", row: ptWorker("r", "1@w", ptLate, time.Hour), pods: []Pod{ptTerminal("w")}, livePod: true, want: Late, wantRule: PodSeen},
	})
}

// A pod of the same name is created only once the old one is deleted, so a
// view that still shows the old, terminal pod was confirmed before any
// successor's row was created: a view confirmed 0 s ago showing it says
// that no successor row exists. A stale view (a watch's cache) may show it
// after the successor's row was written: that row is never condemned.
func TestPodRulesTerminalSuccessor(t *testing.T) {
	t.Parallel()
	successor := ptWorker("new", "1@w", time.Second, 20*time.Second)
	for _, age := range []time.Duration{18 * time.Second, 30 * time.Second, 2 * time.Minute} {
		view := NewPodView([]Pod{ptTerminal("w"), ptLivePod}, ptSeen("w", "live")).WithAge(age)
		f := NewFleet([]AppStatus{successor, ptLiveRow}, ltNow, ltGrace).WithPods(view, ptRules)
		_, live, _ := f.Row("new")
		require.Equal(t, Alive, live, "view %s old", age)
	}
	// The old incarnation's own row, in the same stale view, is dead.
	old := ptWorker("old", "1@w", 2*time.Minute, time.Hour)
	view := NewPodView([]Pod{ptTerminal("w"), ptLivePod}, ptSeen("w", "live")).WithAge(30 * time.Second)
	f := NewFleet([]AppStatus{old, successor, ptLiveRow}, ltNow, ltGrace).WithPods(view, ptRules)
	require.Equal(t, PodTerminal, f.RowRule("old"))
	require.Equal(t, PodSeen, f.RowRule("new"))
	require.Equal(t, Alive, f.Owner("1@w").Liveness)
}

// A hold rests on pod evidence confirmed after the heartbeat it excuses: a
// stalled watch's cache holds nobody.
func TestPodRulesHoldNeedsFreshEvidence(t *testing.T) {
	t.Parallel()
	row := ptWorker("r", "1@w", ptDead, time.Hour) // last heartbeat ptDead ago
	running := ptRunning("w", 2*time.Hour, 0)
	for _, tc := range []struct {
		age  time.Duration
		want Liveness
		rule PodRule
	}{
		{0, Late, PodAliveNotHeartbeating},
		{ptDead - ptClockSkew - time.Second, Late, PodAliveNotHeartbeating},
		{ptDead - ptClockSkew, Dead, PodSeen},
		{ptDead + time.Minute, Dead, PodSeen},
	} {
		view := NewPodView([]Pod{running, ptLivePod}, nil).WithAge(tc.age)
		f := NewFleet([]AppStatus{row, ptLiveRow}, ltNow, ltGrace).WithPods(view, ptRules)
		_, live, _ := f.Row("r")
		require.Equal(t, tc.want, live, "view confirmed %s ago", tc.age)
		require.Equal(t, tc.rule, f.RowRule("r"), "view confirmed %s ago", tc.age)
	}
}
