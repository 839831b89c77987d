// Package kubeevents turns what a pass did into Kubernetes Events about the
// pods involved, so that `kubectl describe pod <worker>` and `kubectl get
// events` tell on-call what lock-reaper did and why: the locks it released,
// the tasks it canceled or requeued, and the mass-death guard's holds.
//
// It reads the pass's report only, after the pass: the judge and the
// heartbeat rules stay free of I/O, and an Event that cannot be written never
// changes what the pass did (Recorder counts it).
package kubeevents

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/lock-reaper/lock-reaper/heartbeat/kube"
	"github.com/lock-reaper/lock-reaper/reaper"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
)

// The Events' machine reasons, as `kubectl get events` lists them.
const (
	ReasonLocksReleased = "LocksReleased"
	ReasonTasksCanceled = "TasksCanceled"
	ReasonTaskRequeued  = "TaskRequeued"
	ReasonMassDeathHold = "MassDeathHold"
)

// Of is the Events of one pass: per pod and reason one Event, whatever the
// number of locks or tasks, about the worker's pod when the pass's pod list
// showed it (namespace is the one listed), else about self, the reaper's own
// pod, with the owners named in the note. A dry run, a skipped pass and a
// pass that did nothing have none; so has an Event about no pod (self
// unknown and no worker pod).
func Of(rep *reaper.Report, namespace string, self kube.PodRef) []kube.Event {
	if rep == nil || rep.Mode != reaper.ModeOnce || rep.Skipped != "" {
		return nil
	}
	pods := podsOf(rep, namespace)
	g := grouper{self: self, pods: pods, groups: map[groupKey]*group{}}
	for _, f := range rep.Findings {
		if f.Result == reaper.ResultReleased {
			kind := "resource lock"
			if f.Kind == judge.KindTask {
				kind = "task lock"
			}
			g.add(ReasonLocksReleased, f.Owner, kind)
		}
	}
	for _, t := range rep.Tasks {
		if t.Result != reaper.ResultUpdated {
			continue
		}
		if t.ClearClaim {
			g.add(ReasonTaskRequeued, t.Owner, t.StateAfter)
		} else {
			g.add(ReasonTasksCanceled, t.Owner, t.StateAfter)
		}
	}
	out := g.events()
	if hold, ok := massDeathHold(rep, self); ok {
		out = append(out, hold)
	}
	return out
}

// podsOf maps each lock owner the pass's pod list showed to its pod. A pod
// without a uid is one the list did not show (gone, never seen): an Event
// about it would reach no `kubectl describe`.
func podsOf(rep *reaper.Report, namespace string) map[string]kube.PodRef {
	out := map[string]kube.PodRef{}
	for _, o := range rep.LockOwners {
		if e := o.Kubernetes; e != nil && e.UID != "" && e.Name != "" {
			out[o.Name] = kube.PodRef{Namespace: namespace, Name: e.Name, UID: e.UID}
		}
	}
	return out
}

// groupKey is one Event: a reason about a pod.
type groupKey struct {
	reason string
	pod    kube.PodRef
}

// group counts what one Event says: per owner, per kind of what was done
// (a verdict, a task's new state).
type group struct {
	byOwner map[string]map[string]int
}

type grouper struct {
	self   kube.PodRef
	pods   map[string]kube.PodRef
	groups map[groupKey]*group
	order  []groupKey
}

func (g *grouper) add(reason, owner, kind string) {
	pod, ok := g.pods[owner]
	if !ok {
		pod = g.self
	}
	if pod.Name == "" {
		return
	}
	k := groupKey{reason: reason, pod: pod}
	gr := g.groups[k]
	if gr == nil {
		gr = &group{byOwner: map[string]map[string]int{}}
		g.groups[k] = gr
		g.order = append(g.order, k)
	}
	if gr.byOwner[owner] == nil {
		gr.byOwner[owner] = map[string]int{}
	}
	gr.byOwner[owner][kind]++
}

// events lists the groups' Events, by pod then reason, so that a pass's
// Events come in a stable order.
func (g *grouper) events() []kube.Event {
	slices.SortFunc(g.order, func(a, b groupKey) int {
		return cmp.Or(strings.Compare(a.pod.Name, b.pod.Name), strings.Compare(a.reason, b.reason))
	})
	out := make([]kube.Event, 0, len(g.order))
	for _, k := range g.order {
		typ, action := kindOf(k.reason)
		out = append(out, kube.Event{Regarding: k.pod, Type: typ, Reason: k.reason, Action: action,
			Note: note(k.reason, g.groups[k].byOwner)})
	}
	return out
}

// kindOf is a reason's Event type and action: work lost (a task finished
// without running to its end) is a warning, a cleanup normal.
func kindOf(reason string) (typ, action string) {
	switch reason {
	case ReasonLocksReleased:
		return corev1.EventTypeNormal, "Release"
	case ReasonTaskRequeued:
		return corev1.EventTypeNormal, "Requeue"
	case ReasonTasksCanceled:
		return corev1.EventTypeWarning, "Cancel"
	}
	return corev1.EventTypeWarning, "Hold"
}

// note is the Event's sentence: what was done, how much, of which owner,
// e.g. "lock-reaper released 12 locks held by 1@pulp-worker-0 (9 resource
// locks, 3 task locks)".
func note(reason string, byOwner map[string]map[string]int) string {
	owners := slices.Sorted(maps.Keys(byOwner))
	total := 0
	var parts []string
	for _, o := range owners {
		n := 0
		for _, c := range byOwner[o] {
			n += c
		}
		total += n
		parts = append(parts, fmt.Sprintf("%s: %d (%s)", o, n, counts(byOwner[o])))
	}
	what := map[string]string{
		ReasonLocksReleased: "released %d %s held by %s",
		ReasonTasksCanceled: "ended %d lost %s of %s",
		ReasonTaskRequeued:  "requeued %d %s claimed by %s",
	}[reason]
	noun := map[string][2]string{
		ReasonLocksReleased: {"lock", "locks"},
		ReasonTasksCanceled: {"task", "tasks"},
		ReasonTaskRequeued:  {"task", "tasks"},
	}[reason]
	if len(owners) == 1 {
		return "lock-reaper " + fmt.Sprintf(what, total, plural(total, noun), owners[0]) + " (" + counts(byOwner[owners[0]]) + ")"
	}
	who := fmt.Sprintf("%d owners", len(owners))
	return "lock-reaper " + fmt.Sprintf(what, total, plural(total, noun), who) + ": " + strings.Join(parts, "; ")
}

// counts words one owner's counts by kind (a kind of lock, a task's new
// state), largest first: "9 resource locks, 3 task locks", "2 failed".
func counts(byKind map[string]int) string {
	kinds := slices.Sorted(maps.Keys(byKind))
	slices.SortStableFunc(kinds, func(a, b string) int { return byKind[b] - byKind[a] })
	parts := make([]string, len(kinds))
	for i, k := range kinds {
		n := byKind[k]
		if strings.HasSuffix(k, "lock") {
			k = plural(n, [2]string{k, k + "s"})
		}
		parts[i] = fmt.Sprintf("%d %s", n, k)
	}
	return strings.Join(parts, ", ")
}

func plural(n int, forms [2]string) string {
	if n == 1 {
		return forms[0]
	}
	return forms[1]
}

// massDeathHold is the Event of a pass the mass-death guard held back, about
// the reaper's own pod: the hold is the fleet's, no single worker's.
func massDeathHold(rep *reaper.Report, self kube.PodRef) (kube.Event, bool) {
	if self.Name == "" {
		return kube.Event{}, false
	}
	i := slices.IndexFunc(rep.Guards, func(g reaper.Guard) bool { return g.Name == judge.GuardMassDeath })
	if i < 0 {
		return kube.Event{}, false
	}
	holdings, tasks := 0, 0
	owners := map[string]bool{}
	for _, f := range rep.Findings {
		if f.Result == reaper.ResultDeferred && f.Deferred == judge.DeferredMassDeath {
			holdings++
			owners[f.Owner] = true
		}
	}
	for _, t := range rep.Tasks {
		if t.Result == reaper.ResultDeferred && t.Deferred == judge.DeferredMassDeath {
			tasks++
			owners[t.Owner] = true
		}
	}
	// The guard's reason begins with what it counted, up to its first
	// colon: "8 of 10 worker rows are dead, dead for ... , more than
	// max_dead_fraction 0.5".
	counted, _, _ := strings.Cut(rep.Guards[i].Reason, ": ")
	msg := fmt.Sprintf("lock-reaper holds back %d %s and %d %s of %d dead %s: %s. "+
		"The hold ends when pulpcore deletes those rows or the pods prove the deaths; if the workers really died, "+
		"check one with `lock-reaper release --owner NAME --dry-run`, then run `lock-reaper once --force`",
		holdings, plural(holdings, [2]string{"lock", "locks"}), tasks, plural(tasks, [2]string{"task", "tasks"}),
		len(owners), plural(len(owners), [2]string{"owner", "owners"}), counted)
	typ, action := kindOf(ReasonMassDeathHold)
	return kube.Event{Regarding: self, Type: typ, Reason: ReasonMassDeathHold, Action: action, Note: msg}, true
}
