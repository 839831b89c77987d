package judge

import (
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/lock-reaper/lock-reaper/heartbeat"
)

// kpPods draws pods for some of the hosts ptGen's owner names use, with
// running, restarted and ended worker containers, and gives each AppStatus
// row a creation time.
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
	for _, host := range []string{"worker-0", "worker-1", "worker-2", "worker-3", "api-0", "api-1"} {
		if !hosts[host] || !rapid.Bool().Draw(t, "pod of "+host) {
			continue
		}
		p := heartbeat.Pod{Name: host, Phase: rapid.SampledFrom([]string{"Running", "Running", "Pending", "Succeeded"}).Draw(t, "phase")}
		if rapid.IntRange(0, 4).Draw(t, "container status") > 0 {
			at := c.snap.Now.Add(-ptSeconds(t, 0, 7200, "container time"))
			ct := &heartbeat.Container{Name: "worker", Running: rapid.Bool().Draw(t, "running"), Restarts: int32(rapid.IntRange(0, 3).Draw(t, "restarts"))}
			if ct.Running {
				ct.StartedAt = &at
			} else {
				ct.FinishedAt = &at
			}
			p.Container = ct
		}
		pods = append(pods, p)
	}
	c.p.Kubernetes = heartbeat.PodRules{HungWorkerGrace: ptSeconds(t, 0, 900, "hung_worker_grace"), ClockSkew: ptSeconds(t, 0, 5, "clock skew")}
	return heartbeat.NewPodView(pods)
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

// A pass whose pods could not be read (nil view) judges exactly as without
// Kubernetes.
func TestKubernetesPropertyNoViewNoChange(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		c := ptGen(t)
		c.p.Kubernetes = heartbeat.PodRules{HungWorkerGrace: time.Minute, ClockSkew: time.Second}
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
	p.Kubernetes = DefaultPolicy().Kubernetes
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
