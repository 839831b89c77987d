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

// A hold rests on pod evidence confirmed after the heartbeat it excuses,
// and no older than HoldEvidenceMaxAge: an older view (a watch's cache, a
// list followed by a long read) holds nobody by itself, and asks for a list
// of the reaper's own (MustConfirmHolds).
func TestPodRulesHoldNeedsFreshEvidence(t *testing.T) {
	t.Parallel()
	row := ptWorker("r", "1@w", ptDead, time.Hour) // last heartbeat ptDead ago
	running := ptRunning("w", 2*time.Hour, 0)
	for _, tc := range []struct {
		age     time.Duration
		want    Liveness
		rule    PodRule
		confirm bool
	}{
		{0, Late, PodAliveNotHeartbeating, false},
		{HoldEvidenceMaxAge, Late, PodAliveNotHeartbeating, false},
		{HoldEvidenceMaxAge + time.Millisecond, Dead, PodSeen, true},
		{ptDead - ptClockSkew - time.Second, Dead, PodSeen, true},
		{ptDead - ptClockSkew, Dead, PodSeen, true},
		{ptDead + time.Minute, Dead, PodSeen, true},
	} {
		view := NewPodView([]Pod{running, ptLivePod}, nil).WithAge(tc.age)
		rows := []AppStatus{row, ptLiveRow}
		require.Equal(t, tc.confirm, MustConfirmHolds(rows, ltNow, ltGrace, view, ptRules), "view confirmed %s ago", tc.age)
		f := NewFleet(rows, ltNow, ltGrace).WithPods(view, ptRules)
		_, live, _ := f.Row("r")
		require.Equal(t, tc.want, live, "view confirmed %s ago", tc.age)
		require.Equal(t, tc.rule, f.RowRule("r"), "view confirmed %s ago", tc.age)
	}
}

// TestPodRulesHoldConfirmedByList: a view too old to hold by itself holds
// what the list made after the database was read (ConfirmHolds) shows, on
// that list's own age; the list's pod gone, not ready, restarted or
// replaced, or the list failed, and the heartbeat rules apply. Every other
// rule keeps the view it was listed with.
func TestPodRulesHoldConfirmedByList(t *testing.T) {
	t.Parallel()
	row := ptWorker("r", "1@w", ptDead, time.Hour)
	running := ptRunning("w", 2*time.Hour, 0)
	list := func(age time.Duration, pods ...Pod) *PodView {
		return NewPodView(append(pods, ptLivePod), nil).WithAge(age)
	}
	for _, tc := range []struct {
		name string
		list *PodView
		want Liveness
		rule PodRule
	}{
		{"the list shows it running: a hung worker keeps its hold", list(0, running), Late, PodAliveNotHeartbeating},
		{"the list's own age counts: sent after the last heartbeat", list(ptDead-ptClockSkew-time.Second, running), Late, PodAliveNotHeartbeating},
		{"the list sent before the last heartbeat + margin holds nothing", list(ptDead-ptClockSkew, running), Dead, PodSeen},
		{"pod deleted during the stall: heartbeat rules", list(0), Dead, PodSeen},
		{"node lost since: heartbeat rules", list(0, ptNodeLost(running)), Dead, PodSeen},
		{"restarted since: heartbeat rules", list(0, ptRunning("w", 10*time.Second, 1)), Dead, PodSeen},
		{"a successor of the name: heartbeat rules", list(0, ptWith(ptRunning("w", time.Minute, 0), func(p *Pod) { p.UID = "uid-w2" })), Dead, PodSeen},
		{"the list failed: heartbeat rules", nil, Dead, PodSeen},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rows := []AppStatus{row, ptLiveRow}
			view := NewPodView([]Pod{running, ptLivePod}, ptSeen("w", "live")).WithAge(30 * time.Second).ConfirmHolds(tc.list)
			require.False(t, MustConfirmHolds(rows, ltNow, ltGrace, view, ptRules), "confirmed once")
			f := NewFleet(rows, ltNow, ltGrace).WithPods(view, ptRules)
			_, live, _ := f.Row("r")
			require.Equal(t, tc.want, live)
			require.Equal(t, tc.rule, f.RowRule("r"))
		})
	}
	// The confirming list weighs only holds: a restart the list shows, after
	// the database was read, condemns no row (its successor's row may be
	// unread); the view's own evidence does.
	late := ptWorker("l", "1@x", ptLate, time.Hour)
	view := NewPodView([]Pod{running, ptRunning("x", 2*time.Hour, 0), ptLivePod}, ptSeen("w", "x", "live")).WithAge(30 * time.Second).
		ConfirmHolds(list(0, running, ptRunning("x", time.Second, 1)))
	f := NewFleet([]AppStatus{row, late, ptLiveRow}, ltNow, ltGrace).WithPods(view, ptRules)
	_, live, _ := f.Row("l")
	require.Equal(t, Late, live)
	require.Equal(t, PodSeen, f.RowRule("l"))
}

// TestMustConfirmHolds is the decision "this view must be confirmed by a
// list before it may hold": only a view that would hold some row alive, on
// evidence too old to hold by itself, and not yet confirmed.
func TestMustConfirmHolds(t *testing.T) {
	t.Parallel()
	running := ptRunning("w", 2*time.Hour, 0)
	old := 30 * time.Second
	for _, tc := range []struct {
		name string
		row  AppStatus
		pods []Pod
		age  time.Duration
		want bool
	}{
		{"hung worker, stale view: confirm", ptWorker("r", "1@w", ptDead, time.Hour), []Pod{running}, old, true},
		{"watch's last word before the last heartbeat: confirm", ptWorker("r", "1@w", ptDead, time.Hour), []Pod{running}, ptDead + time.Minute, true},
		{"hung worker, fresh view: no list", ptWorker("r", "1@w", ptDead, time.Hour), []Pod{running}, time.Second, false},
		{"alive row: nothing to hold", ptWorker("r", "1@w", time.Second, time.Hour), []Pod{running}, old, false},
		{"late row: the heartbeat rules keep it anyway", ptWorker("r", "1@w", ptLate, time.Hour), []Pod{running}, old, false},
		{"past hung_worker_grace: no hold in question", ptWorker("r", "1@w", ltWorkerTTL+ltGrace+ptHungWorkerGrace+time.Second, 2*time.Hour), []Pod{running}, old, false},
		{"pod could not run (node lost): no hold in question", ptWorker("r", "1@w", ptDead, time.Hour), []Pod{ptNodeLost(running)}, old, false},
		{"container started after the row: no hold in question", ptWorker("r", "1@w", ptDead, time.Hour), []Pod{ptRunning("w", 10*time.Minute, 0)}, old, false},
		{"container ended: dead by the kubelet's report", ptWorker("r", "1@w", ptDead, time.Hour), []Pod{ptEnded(running, 3*time.Minute, "Error", 1)}, old, false},
		{"not pid 1: no hold in question", ptWorker("r", "7@w", ptDead, time.Hour), []Pod{running}, old, false},
		{"no pod of the name: no hold in question", ptWorker("r", "1@w", ptDead, time.Hour), nil, old, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rows := []AppStatus{tc.row, ptLiveRow}
			view := NewPodView(append(tc.pods, ptLivePod), ptSeen("w", "live")).WithAge(tc.age)
			require.Equal(t, tc.want, MustConfirmHolds(rows, ltNow, ltGrace, view, ptRules))
			if tc.want {
				require.False(t, MustConfirmHolds(rows, ltNow, ltGrace, view.ConfirmHolds(nil), ptRules), "asked once")
			}
		})
	}
	require.False(t, MustConfirmHolds([]AppStatus{ptLiveRow}, ltNow, ltGrace, nil, ptRules), "no view, no list")
}
