package judge

import (
	"strings"
	"testing"
	"time"

	"github.com/lock-reaper/lock-reaper/heartbeat"
	"pgregory.net/rapid"
)

// kpPods draws pods for some of the hosts ptGen's owner names use, in any
// state Kubernetes' controllers and the kubelet leave one in (conditions,
// deletion, DisruptionTarget, phases, running, restarted and ended
// containers), a memory of earlier lists, and gives each AppStatus row a
// creation time.
func kpPods(t *rapid.T, c *ptCase) *heartbeat.PodView {
	for i := range c.snap.AppStatuses {
		r := &c.snap.AppStatuses[i]
		r.PulpCreated = r.LastHeartbeat.Add(-ptSeconds(t, 0, 3600, "row lifetime"))
	}
	hosts := map[string]bool{}
	for _, n := range append(append([]string{}, ptWorkerNames...), ptAPINames...) {
		_, host, _ := strings.Cut(n, "@")
		hosts[host] = true
	}
	var pods []heartbeat.Pod
	seen := map[string]heartbeat.SeenPod{}
	for _, host := range []string{"worker-0", "worker-1", "worker-2", "worker-3", "api-0", "api-1"} {
		if !hosts[host] {
			continue
		}
		if rapid.Bool().Draw(t, "seen "+host) {
			seen[host] = heartbeat.SeenPod{UID: "uid-" + host}
		}
		if !rapid.Bool().Draw(t, "pod of "+host) {
			continue
		}
		p := heartbeat.Pod{
			Name: host, UID: "uid-" + host,
			Phase:           rapid.SampledFrom([]string{"Running", "Running", "Pending", "Succeeded", "Failed"}).Draw(t, "phase"),
			Terminating:     rapid.IntRange(0, 3).Draw(t, "terminating") == 0,
			Ready:           rapid.IntRange(0, 3).Draw(t, "ready") > 0,
			ContainersReady: rapid.IntRange(0, 3).Draw(t, "containers ready") > 0,
			Disruption:      rapid.SampledFrom([]string{"", "", "", "DeletionByTaintManager", "EvictionByEvictionAPI", "DeletionByPodGC", "TerminationByKubelet"}).Draw(t, "disruption"),
			AnyRunning:      rapid.Bool().Draw(t, "any running"),
		}
		if rapid.IntRange(0, 4).Draw(t, "start time") > 0 {
			at := c.snap.Now.Add(-ptSeconds(t, 0, 3*3600, "pod start"))
			p.StartTime = &at
		}
		p.Container, p.API = kpContainer(t, c, "worker"), kpContainer(t, c, "api")
		pods = append(pods, p)
	}
	c.p.Kubernetes = heartbeat.PodPolicy{HungWorkerGrace: ptSeconds(t, 0, 900, "hung_worker_grace"), ClockSkew: ptSeconds(t, 0, 5, "clock skew")}
	return heartbeat.NewPodView(pods, seen).WithAge(ptSeconds(t, 0, 300, "view age"))
}

// kpContainer draws a container status as the kubelet reports one, or nil.
func kpContainer(t *rapid.T, c *ptCase, name string) *heartbeat.Container {
	if rapid.IntRange(0, 4).Draw(t, name+" status") == 0 {
		return nil
	}
	at := func(label string) *time.Time {
		v := c.snap.Now.Add(-ptSeconds(t, 0, 7200, name+" "+label))
		return &v
	}
	ct := &heartbeat.Container{Name: name, Running: rapid.Bool().Draw(t, name+" running"), Restarts: int32(rapid.IntRange(0, 3).Draw(t, name+" restarts"))}
	switch {
	case ct.Running:
		ct.StartedAt = at("started")
	case rapid.Bool().Draw(t, name+" terminated"):
		ct.Terminated = &heartbeat.Termination{Reason: "OOMKilled", ExitCode: 137, FinishedAt: at("finished")}
		if rapid.Bool().Draw(t, name+" no finish time") {
			ct.Terminated = &heartbeat.Termination{Reason: "ContainerStatusUnknown", ExitCode: 137}
		}
		ct.FinishedAt = ct.Terminated.FinishedAt
	}
	if ct.Restarts > 0 {
		ct.LastTerminated = &heartbeat.Termination{Reason: "Error", ExitCode: 1, FinishedAt: at("last finished")}
	}
	return ct
}

// kpHastened names the owners and rows Kubernetes made more dead than their
// heartbeats did.
func kpHastened(c ptCase, view *heartbeat.PodView) (names, rows map[string]bool) {
	plain := heartbeat.NewFleet(c.snap.AppStatuses, c.snap.Now, c.p.HeartbeatGrace)
	withPods := heartbeat.NewFleet(c.snap.AppStatuses, c.snap.Now, c.p.HeartbeatGrace).WithPods(view, c.p.Kubernetes)
	names, rows = map[string]bool{}, map[string]bool{}
	for _, r := range c.snap.AppStatuses {
		_, before, _ := plain.Row(r.ID)
		_, after, _ := withPods.Row(r.ID)
		if after < before {
			names[r.Name], rows[r.ID] = true, true
		}
	}
	return names, rows
}

// Kubernetes evidence turns a holding the contract keeps into a release, or
// updates a task the contract leaves alone, only where a row was made dead by
// the two certain-death rules (heartbeat tests: only pod-gone and
// container-restarted make a row more dead).
func TestKubernetesPropertyOnlyCertainDeathReleases(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		c := ptGen(t)
		view := kpPods(t, &c)
		without := All(c.snap, c.p)
		snapWith := c.snap
		snapWith.Pods = view
		with := All(snapWith, c.p)
		names, rows := kpHastened(c, view)
		// The contract's decision is the action; a max_releases cut may move
		// as other holdings are kept, so deferral is compared only for the
		// mass-death guard, which pod evidence must never lift.
		released := func(jd Judgement) bool { return jd.Action == ActionRelease }
		if kpGuarded(without) && !kpGuarded(with) {
			t.Fatalf("the mass-death guard tripped without pods, not with them")
		}
		for _, h := range c.snap.Holdings {
			before, after := ptJudgement(t, without, h), ptJudgement(t, with, h)
			if !released(before) && released(after) && !names[h.Owner] {
				t.Fatalf("%s of %s: %s/%s without pods, %s/%s with pods, owner not dead by Kubernetes",
					h.Key, h.Owner, before.Verdict, before.Action, after.Verdict, after.Action)
			}
			if e := after.Evidence().Kubernetes; !released(before) && released(after) && e != nil && e.Rule == heartbeat.PodTerminal {
				if e.Phase != "Failed" && e.Phase != "Succeeded" || e.AnyRunning || e.Terminating ||
					e.Disruption != "" && e.Disruption != "TerminationByKubelet" {
					t.Fatalf("%s of %s released as pod-terminal, a phase the kubelet did not write: %+v", h.Key, h.Owner, e.Pod)
				}
			}
		}
		updated := map[string]bool{}
		for _, tj := range without.Tasks {
			if tj.Action == ActionUpdate {
				updated[tj.ID] = true
			}
		}
		for _, tj := range with.Tasks {
			if tj.Action == ActionUpdate && !updated[tj.ID] && !rows[tj.AppLockID] {
				t.Fatalf("task %s updated as %s only with pods, its app_lock row %q not dead by Kubernetes", tj.ID, tj.Verdict, tj.AppLockID)
			}
		}
	})
}

// No pod state yields a later release than without Kubernetes, but for an
// owner held alive by a pod that could run; and no owner is judged pod-gone
// that no earlier list showed.
func TestKubernetesPropertyNeverLaterButForALivePod(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		c := ptGen(t)
		view := kpPods(t, &c)
		without := All(c.snap, c.p)
		snapWith := c.snap
		snapWith.Pods = view
		with := All(snapWith, c.p)
		for _, h := range c.snap.Holdings {
			before, after := ptJudgement(t, without, h), ptJudgement(t, with, h)
			if before.Action != ActionRelease || after.Action == ActionRelease {
				continue
			}
			e := after.Evidence().Kubernetes
			if e == nil || e.Rule != heartbeat.PodAliveNotHeartbeating || !e.CouldRun() {
				t.Fatalf("%s of %s released without pods (%s), kept with them (%s) by %+v", h.Key, h.Owner, before.Verdict, after.Verdict, e)
			}

		}
		fleet := heartbeat.NewFleet(c.snap.AppStatuses, c.snap.Now, c.p.HeartbeatGrace).WithPods(view, c.p.Kubernetes)
		for _, r := range c.snap.AppStatuses {
			if fleet.RowRule(r.ID) == heartbeat.PodAliveNotHeartbeating && view.Age() >= c.snap.Now.Sub(r.LastHeartbeat) {
				t.Fatalf("row %s held alive by a view %s old, older than its heartbeat", r.Name, view.Age())
			}
		}
		for _, o := range with.FleetOwners {
			if o.Kubernetes == nil || o.Kubernetes.Rule != heartbeat.PodGone {
				continue
			}
			if !view.SeenBefore(o.Kubernetes.Name) {
				t.Fatalf("owner %s judged pod-gone, no earlier list showed pod %s", o.Name, o.Kubernetes.Name)
			}
		}
	})
}

// A pass whose pods could not be read (nil view) judges exactly as without
// Kubernetes.
func TestKubernetesPropertyNoViewNoChange(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		c := ptGen(t)
		c.p.Kubernetes = heartbeat.PodPolicy{HungWorkerGrace: time.Minute, ClockSkew: time.Second}
		a, b := All(c.snap, c.p), All(c.snap, withDefaultPodRules(c.p))
		if len(a.Holdings) != len(b.Holdings) || len(a.Tasks) != len(b.Tasks) {
			t.Fatalf("plans differ")
		}
		for i := range a.Holdings {
			if a.Holdings[i].Verdict != b.Holdings[i].Verdict || a.Holdings[i].Action != b.Holdings[i].Action {
				t.Fatalf("holding %d differs", i)
			}
		}
	})
}

// withDefaultPodRules is p with the Kubernetes rules' defaults: without a view
// they must not matter.
func withDefaultPodRules(p Policy) Policy {
	p.Kubernetes = jtPolicy().Kubernetes
	return p
}

func kpGuarded(p Plan) bool {
	for _, g := range p.Guards {
		if g.Name == "mass-death" {
			return true
		}
	}
	return false
}
