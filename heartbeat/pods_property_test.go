package heartbeat

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// ptDrawContainer draws a container status as the kubelet reports one.
func ptDrawContainer(t *rapid.T, name string) *Container {
	if !rapid.Bool().Draw(t, "has "+name) {
		return nil
	}
	c := &Container{Name: name, Running: rapid.Bool().Draw(t, name+" running"), Restarts: int32(rapid.IntRange(0, 3).Draw(t, name+" restarts"))}
	at := func(label string) *time.Time {
		return ptAt(time.Duration(rapid.Int64Range(0, 7200).Draw(t, name+" "+label)) * time.Second)
	}
	if c.Running {
		c.StartedAt = at("started")
	} else if rapid.Bool().Draw(t, name+" terminated") {
		c.Terminated = &Termination{Reason: "OOMKilled", ExitCode: 137, FinishedAt: at("finished")}
		if rapid.Bool().Draw(t, name+" no finish time") {
			c.Terminated = &Termination{Reason: "ContainerStatusUnknown", ExitCode: 137}
		}
		c.FinishedAt = c.Terminated.FinishedAt
	}
	if rapid.Bool().Draw(t, name+" last terminated") {
		c.LastTerminated = &Termination{Reason: "Error", ExitCode: 1, FinishedAt: at("last finished")}
	}
	return c
}

// ptDrawPod draws a pod in any state Kubernetes' controllers and the kubelet
// leave one in.
func ptDrawPod(t *rapid.T, host string) Pod {
	p := Pod{
		Name: host, UID: "uid-" + host,
		Phase:           rapid.SampledFrom([]string{"Running", "Pending", "Failed", "Succeeded", "Unknown"}).Draw(t, "phase"),
		Terminating:     rapid.Bool().Draw(t, "terminating"),
		Ready:           rapid.Bool().Draw(t, "ready"),
		ContainersReady: rapid.Bool().Draw(t, "containers ready"),
		Disruption:      rapid.SampledFrom([]string{"", "", "DeletionByTaintManager", "EvictionByEvictionAPI", "DeletionByPodGC", "TerminationByKubelet"}).Draw(t, "disruption"),
		AnyRunning:      rapid.Bool().Draw(t, "any running"),
		Container:       ptDrawContainer(t, "worker"),
		API:             ptDrawContainer(t, "api"),
	}
	if rapid.IntRange(0, 4).Draw(t, "start time") > 0 {
		p.StartTime = ptAt(time.Duration(rapid.Int64Range(0, 3*3600).Draw(t, "pod start")) * time.Second)
	}
	return p
}

// TestPodRulesProperty checks, for any fleet, any pods in any state and any
// memory of earlier lists, that the Kubernetes rules:
//   - make a row more dead only by pod-gone (a row past ttl of a pod an
//     earlier list showed), container-restarted or container-ended (the
//     kubelet's report), and only in a trusted view;
//   - make a row less dead only by holding a dead row as late, and only for
//     a pod that could run: no pod state yields a later release than
//     without Kubernetes otherwise;
//   - never call a pod gone that no earlier list showed.
func TestPodRulesProperty(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		hosts := []string{"a", "b", "c", "d"}
		var rows []AppStatus
		for i := range rapid.IntRange(0, 6).Draw(t, "rows") {
			pid := rapid.SampledFrom([]string{"1", "7"}).Draw(t, "pid")
			host := rapid.SampledFrom(hosts).Draw(t, "host")
			age := time.Duration(rapid.Int64Range(-5, int64(20*time.Minute/time.Second)).Draw(t, "age")) * time.Second
			created := age + time.Duration(rapid.Int64Range(0, 3600).Draw(t, "created"))*time.Second
			r := ptWorker(fmt.Sprintf("id-%d", i), pid+"@"+host, age, created)
			r.AppType = rapid.SampledFrom([]string{"worker", "api", "content"}).Draw(t, "app_type")
			rows = append(rows, r)
		}
		var pods []Pod
		seen := map[string]SeenPod{}
		for _, host := range hosts {
			if rapid.Bool().Draw(t, "seen "+host) {
				seen[host] = SeenPod{UID: "uid-" + host}
			}
			switch rapid.IntRange(0, 3).Draw(t, "pod "+host) {
			case 1, 2:
				pods = append(pods, ptDrawPod(t, host))
			case 3: // running and ready, as most are
				pods = append(pods, ptRunning(host, time.Duration(rapid.Int64Range(0, 3*3600).Draw(t, "started "+host))*time.Second, 0))
			}
		}
		view := NewPodView(pods, seen).WithAge(time.Duration(rapid.Int64Range(0, 300).Draw(t, "view age")) * time.Second)
		plain := NewFleet(rows, ltNow, ltGrace)
		withPods := NewFleet(rows, ltNow, ltGrace).WithPods(view, ptRules)
		trusted := withPods.PodViewTrusted()
		byName := map[string]Pod{}
		for _, p := range pods {
			byName[p.Name] = p
		}
		for _, r := range rows {
			_, before, _ := plain.Row(r.ID)
			_, after, _ := withPods.Row(r.ID)
			rule := withPods.RowRule(r.ID)
			_, host, _ := strings.Cut(r.Name, "@")
			if rule == PodGone && !view.SeenBefore(host) {
				t.Fatalf("row %s judged pod-gone, no earlier list showed %s", r.Name, host)
			}
			switch {
			case after < before:
				if !trusted {
					t.Fatalf("row %s %s → %s by %q in an untrusted view", r.Name, before, after, rule)
				}
				if _, found := byName[host]; !found && !view.SeenBefore(host) {
					t.Fatalf("row %s %s → %s by %q: the view does not cover its owner", r.Name, before, after, rule)
				}
				switch rule {
				case PodGone:
					if before == Alive {
						t.Fatalf("row %s alive by its heartbeat judged pod-gone", r.Name)
					}
				case PodTerminal:
					if p := byName[host]; p.Phase != "Failed" && p.Phase != "Succeeded" || p.AnyRunning || p.Terminating ||
						p.Disruption != "" && p.Disruption != "TerminationByKubelet" {
						t.Fatalf("row %s %s → %s by %q, the kubelet did not end pod %+v", r.Name, before, after, rule, p)
					}
				case PodRestarted, PodContainerEnded:
					if p := byName[host]; !endReported(p.Container) && !endReported(p.API) {
						t.Fatalf("row %s %s → %s by %q, the kubelet reports no end", r.Name, before, after, rule)
					}
				default:
					t.Fatalf("row %s %s → %s by %q", r.Name, before, after, rule)
				}
			case after > before:
				if rule != PodAliveNotHeartbeating || before != Dead || after != Late || !byName[host].CouldRun() {
					t.Fatalf("row %s %s → %s by %q (pod %+v)", r.Name, before, after, rule, byName[host])
				}
				if !ltNow.Add(-view.Age()).After(r.LastHeartbeat) {
					t.Fatalf("row %s held alive by a view confirmed %s ago, before its last heartbeat", r.Name, view.Age())
				}
				if view.Age() > HoldEvidenceMaxAge {
					t.Fatalf("row %s held alive by a view confirmed %s ago, which no list confirmed", r.Name, view.Age())
				}
			}
		}
		// A list made after the database was read, confirming the holds:
		// it may keep a row alive the old view alone could not, on a pod
		// that list shows running, and never condemns one.
		var listed []Pod
		for _, host := range hosts {
			switch rapid.IntRange(0, 2).Draw(t, "listed "+host) {
			case 1:
				listed = append(listed, ptDrawPod(t, host))
			case 2: // as the view shows it
				for _, p := range pods {
					if p.Name == host {
						listed = append(listed, p)
					}
				}
			}
		}
		list := NewPodView(listed, nil).WithAge(time.Duration(rapid.Int64Range(0, 10).Draw(t, "list age")) * time.Second)
		listByName := map[string]Pod{}
		for _, p := range listed {
			listByName[p.Name] = p
		}
		confirmedView := NewPodView(pods, seen).WithAge(view.Age()).ConfirmHolds(list)
		withList := NewFleet(rows, ltNow, ltGrace).WithPods(confirmedView, ptRules)
		for _, r := range rows {
			_, alone, _ := withPods.Row(r.ID)
			_, confirmed, _ := withList.Row(r.ID)
			_, host, _ := strings.Cut(r.Name, "@")
			switch {
			case confirmed < alone:
				t.Fatalf("row %s %s → %s: the confirming list condemned it", r.Name, alone, confirmed)
			case confirmed > alone:
				p, ok := listByName[host]
				if withList.RowRule(r.ID) != PodAliveNotHeartbeating || !ok || !p.CouldRun() || !ltNow.Add(-list.Age()).After(r.LastHeartbeat) {
					t.Fatalf("row %s %s → %s by %q: not on a running pod of the list (%+v)", r.Name, alone, confirmed, withList.RowRule(r.ID), p)
				}
			}
		}
		for _, o := range plain.Owners() {
			after := withPods.Owner(o.Name)
			if after.Liveness == Alive && o.Liveness != Alive {
				t.Fatalf("owner %s made alive by Kubernetes", o.Name)
			}
		}
	})
}

// endReported says the kubelet reports an end of the container: a
// terminated state, or a restart (the end kept in lastState).
func endReported(c *Container) bool {
	return c != nil && (c.Terminated != nil || c.Restarts > 0)
}

// TestPodRulesPropertyOwnerOutsideView: an owner the view cannot see (a
// hostNetwork worker named after its node, a VM worker, a pod created after
// the list) changes no other row's liveness, as long as some alive row's
// pod is in the view; and is itself judged by its heartbeat alone.
func TestPodRulesPropertyOwnerOutsideView(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		hosts := []string{"a", "b", "c"}
		rows := []AppStatus{ptLiveRow}
		for i := range rapid.IntRange(0, 5).Draw(t, "rows") {
			host := rapid.SampledFrom(hosts).Draw(t, "host")
			age := time.Duration(rapid.Int64Range(0, int64(20*time.Minute/time.Second)).Draw(t, "age")) * time.Second
			created := age + time.Duration(rapid.Int64Range(0, 3600).Draw(t, "created"))*time.Second
			rows = append(rows, ptWorker(fmt.Sprintf("id-%d", i), "1@"+host, age, created))
		}
		pods := []Pod{ptLivePod}
		seen := ptSeen("live")
		for _, host := range hosts {
			if rapid.Bool().Draw(t, "seen "+host) {
				seen[host] = SeenPod{UID: "uid-" + host}
			}
			if rapid.Bool().Draw(t, "has pod "+host) {
				pods = append(pods, ptDrawPod(t, host))
			}
		}
		outsideAge := time.Duration(rapid.Int64Range(0, int64(20*time.Minute/time.Second)).Draw(t, "outside age")) * time.Second
		outside := ptWorker("outside", "1@node-9", outsideAge, time.Hour)
		without := NewFleet(rows, ltNow, ltGrace).WithPods(NewPodView(pods, seen), ptRules)
		with := NewFleet(append(slices.Clone(rows), outside), ltNow, ltGrace).WithPods(NewPodView(pods, seen), ptRules)
		for _, r := range rows {
			_, a, _ := without.Row(r.ID)
			_, b, _ := with.Row(r.ID)
			if a != b {
				t.Fatalf("row %s: %s without the outside owner, %s with it", r.Name, a, b)
			}
		}
		_, live, _ := with.Row("outside")
		if live != outside.Liveness(ltNow, ltGrace) {
			t.Fatalf("the outside owner judged %s, %s by its heartbeat", live, outside.Liveness(ltNow, ltGrace))
		}
	})
}
