package heartbeat

import "time"

// The decision functions of the Kubernetes rules, each over explicit facts.
// docs/verdicts.md states each rule with the Kubernetes behaviour it rests on.

// CouldRun says the pod shows it can still run its containers: phase
// Running, no deletion timestamp, no DisruptionTarget condition, and the
// Ready and ContainersReady conditions True. The node lifecycle controller
// turns Ready False on every pod of a node that stops reporting; the taint
// manager then adds DisruptionTarget and deletes the pod, which stays
// Terminating while the node is away. Only such a pod may hold a worker
// alive.
func (p Pod) CouldRun() bool {
	return p.Phase == "Running" && !p.Terminating && p.Disruption == "" && p.Ready && p.ContainersReady
}

// EndedBefore is what the kubelet reports of the container's ended
// incarnations: every incarnation that started before end has ended. A
// running container that the kubelet restarted (restartCount > 0) gives its
// current start; a terminated one, or one waiting after an end, the end's
// finishedAt. ok is false when the kubelet reports no end. All times are the
// node's clock.
func (c *Container) EndedBefore() (end time.Time, rule PodRule, ok bool) {
	switch {
	case c == nil:
	case c.Running:
		if c.Restarts > 0 && c.StartedAt != nil {
			return *c.StartedAt, PodRestarted, true
		}
	case c.Terminated != nil && c.Terminated.FinishedAt != nil:
		return *c.Terminated.FinishedAt, PodContainerEnded, true
	case c.Restarts > 0 && c.LastTerminated != nil && c.LastTerminated.FinishedAt != nil:
		return *c.LastTerminated.FinishedAt, PodContainerEnded, true
	}
	return time.Time{}, "", false
}

// endedRule says the row was written only by an incarnation of its
// container that the kubelet reports ended, and names the rule:
//   - the kubelet reports an end at end (EndedBefore);
//   - the row was created (its uuid7 pulp_id, the worker's clock) before
//     end - margin: a successor starts after end, so it did not create it;
//   - the row was created no earlier than the pod's start - margin
//     (status.startTime, the node's clock): it belongs to this pod, not to
//     an earlier pod of the same name whose end the kubelet never reported
//     (an earlier pod's rows were created before it was replaced, and a
//     worker's row is written seconds after its pod starts);
//   - the row's last heartbeat is not after end + margin: nobody wrote it
//     after the end.
//
// Worker and node share one clock unless the pod moved node; the margin
// covers the rest. The database's clock (now) is compared with none of these.
func endedRule(r AppStatus, p Pod, margin time.Duration) (PodRule, bool) {
	end, rule, ok := containerOf(p, r.AppType).EndedBefore()
	switch {
	case !ok, r.PulpCreated.IsZero(), p.StartTime == nil:
		return "", false
	case !r.PulpCreated.Before(end.Add(-margin)):
		return "", false
	case r.PulpCreated.Before(p.StartTime.Add(-margin)):
		return "", false
	case r.LastHeartbeat.After(end.Add(margin)):
		return "", false
	}
	return rule, true
}

// terminalRule says the kubelet reports every container of the pod stopped
// and the row was written by this pod's incarnation, which has therefore
// ended, although the kubelet could give no finish time:
//   - phase Failed or Succeeded, and no container of the pod running: the
//     kubelet holds a terminal phase back while the pod could have running
//     containers (status_manager.go, mergePodStatus), whereas PodGC writes
//     Failed over the last reported states, typically running;
//   - the row's container terminated (ContainerStatusUnknown, or another
//     reason): not a pod rejected or never initialised, whose containers
//     never ran;
//   - no DisruptionTarget condition but the kubelet's own
//     (TerminationByKubelet): PodGC adds DeletionByPodGC for a node that no
//     longer exists, and the node may still run the containers;
//   - no deletion timestamp: PodGC fails the terminating pods of an
//     out-of-service node, and the unscheduled terminating ones, with no
//     condition at all;
//   - the row created no earlier than the pod's start - margin (it is this
//     pod's, not an earlier pod's of the name) and before the view was last
//     confirmed - margin: a pod of the same name can only be created once
//     this one is deleted, after the view showed it, so a successor's rows
//     are younger.
//
// The phase carries no time, so the row's heartbeat is not compared with an
// end; the phase is the end.
func terminalRule(r AppStatus, p Pod, confirmed time.Time, margin time.Duration) bool {
	c := containerOf(p, r.AppType)
	switch {
	case p.Phase != "Failed" && p.Phase != "Succeeded", p.AnyRunning, p.Terminating:
		return false
	case p.Disruption != "" && p.Disruption != "TerminationByKubelet":
		return false
	case c == nil || c.Running || c.Terminated == nil:
		return false
	case r.PulpCreated.IsZero() || p.StartTime == nil:
		return false
	case r.PulpCreated.Before(p.StartTime.Add(-margin)):
		return false
	}
	return r.PulpCreated.Before(confirmed.Add(-margin))
}

// holdsLife says the pod proves the row's process alive: its pod shows the
// life (runsSinceRow) and the view was confirmed after the row's last
// heartbeat + margin, so the life it shows is newer than the silence it
// excuses (a stalled watch's cache shows a pod that may have been gone
// since).
func holdsLife(r AppStatus, p Pod, confirmed time.Time, margin time.Duration) bool {
	return runsSinceRow(r, p, margin) && confirmed.After(r.LastHeartbeat.Add(margin))
}

// runsSinceRow says the pod, as the view shows it, runs the row's process:
// the pod can run, and its container runs without restart since no later
// than the row's creation + margin, so the running process is the one that
// created the row.
func runsSinceRow(r AppStatus, p Pod, margin time.Duration) bool {
	c := containerOf(p, r.AppType)
	return p.CouldRun() && c != nil && c.Running && c.StartedAt != nil &&
		!r.PulpCreated.IsZero() && !c.StartedAt.After(r.PulpCreated.Add(margin))
}

// hold is what the pods say of a row dead by its heartbeat (holdOf).
type hold int

const (
	holdNone hold = iota
	// holdGranted: alive-not-heartbeating, the row is late.
	holdGranted
	// holdHung: alive by the pods, but past hung_worker_grace.
	holdHung
	// holdUnconfirmed: the view would hold the row, but it is older than
	// HoldEvidenceMaxAge and no list confirmed it: no hold yet.
	holdUnconfirmed
)

// holdOf decides the hold of a row dead by its heartbeat whose owner is
// pid 1 of the pod p of the view:
//   - the view's pod must run the row's process (runsSinceRow); past ttl +
//     grace + hung_worker_grace that life holds nothing (holdHung when the
//     view was confirmed after the last heartbeat + margin);
//   - a view no older than HoldEvidenceMaxAge, confirmed after the last
//     heartbeat + margin, holds by itself (holdsLife);
//   - any other view holds only what the list that confirmed it shows
//     (ConfirmHolds): that list's pod of the name, judged by holdsLife on
//     the list's own confirmation. Until such a list is made the hold is
//     unconfirmed (holdUnconfirmed, MustConfirmHolds) and the heartbeat
//     rules apply; so a watch that stalled after its last word, with the
//     pod deleted since, never holds a dead worker past ttl + grace, and a
//     hung worker whose pod a list shows running keeps its hold however
//     old the watch's last word.
func holdOf(r AppStatus, p Pod, fx rowFacts, v *PodView, rules PodPolicy) hold {
	margin := rules.ClockSkew
	switch {
	case !runsSinceRow(r, p, margin):
		return holdNone
	case fx.now.Sub(r.LastHeartbeat) > r.TTL+fx.grace+rules.HungWorkerGrace:
		if holdsLife(r, p, fx.confirmed, margin) {
			return holdHung
		}
		return holdNone
	case v.age <= HoldEvidenceMaxAge && holdsLife(r, p, fx.confirmed, margin):
		return holdGranted
	case !v.holdsChecked:
		return holdUnconfirmed
	case v.holdsBy == nil:
		return holdNone
	}
	fresh, ok := v.holdsBy.pods[p.Name]
	if !ok || !holdsLife(r, fresh, fx.now.Add(-v.holdsBy.age), margin) {
		return holdNone
	}
	return holdGranted
}

// MustConfirmHolds says the view would hold some row of rows alive
// (alive-not-heartbeating) on evidence too old to hold by itself (older
// than HoldEvidenceMaxAge, or confirmed before the row's last heartbeat),
// and no list confirmed it yet: the reaper lists the pods itself, after the
// database was read, and gives that list to the view (ConfirmHolds) before
// the snapshot is judged. Hung workers are rare, so such lists are too.
func MustConfirmHolds(rows []AppStatus, now time.Time, grace time.Duration, v *PodView, rules PodPolicy) bool {
	if v == nil || v.holdsChecked {
		return false
	}
	return NewFleet(rows, now, grace).WithPods(v, rules).holdsUnconfirmed
}

// rowFacts are the facts of the pass every row's rules share: the database's
// now, when the view was last confirmed (on the same clock), the heartbeat
// grace, and whether the view is anchored in the fleet (viewAnchored).
type rowFacts struct {
	now, confirmed time.Time
	grace          time.Duration
	trusted        bool
}

// rowRule applies the rules to one row: the rule that decided and the row's
// liveness after it, and whether a hold waits for a list to confirm it
// (holdOf). The absence and end rules apply only in an anchored view, and
// each only to an owner the view covers: its pod is in the view (ended,
// terminal) or an earlier list showed it (gone). An owner the view cannot
// see keeps the heartbeat rules, whatever the others have.
func rowRule(r AppStatus, live Liveness, fx rowFacts, v *PodView, rules PodPolicy) (PodRule, Pod, Liveness, bool) {
	pid, host, ok := podOwner(r)
	if !ok {
		return "", Pod{}, live, false
	}
	pod, found, ambiguous := v.lookup(host)
	if !found {
		gone := Pod{Name: host, UID: v.seen[host].UID}
		switch {
		case live == Alive:
			return PodOutsideView, gone, live, false
		case ambiguous || !fx.trusted || !v.SeenBefore(host):
			return PodNotInView, gone, live, false
		}
		return PodGone, gone, Dead, false
	}
	if fx.trusted {
		if rule, ok := endedRule(r, pod, rules.ClockSkew); ok {
			return rule, pod, Dead, false
		}
		if terminalRule(r, pod, fx.confirmed, rules.ClockSkew) {
			return PodTerminal, pod, Dead, false
		}
	}
	if live == Dead && pid == "1" {
		switch holdOf(r, pod, fx, v, rules) {
		case holdGranted:
			return PodAliveNotHeartbeating, pod, Late, false
		case holdHung:
			return PodHungTooLong, pod, live, false
		case holdUnconfirmed:
			return PodSeen, pod, live, true
		}
	}
	return PodSeen, pod, live, false
}

// viewAnchored says the view is a list of this fleet's pods, taken while the
// database records heartbeats: some worker or API row is alive and its pod,
// by its exact name, is in the view. A list of another cluster (a wrong
// context) or namespace shares no pod name with ours (a Deployment's pods
// carry its ReplicaSet's hash and a random suffix), and a fleet with no
// fresh heartbeat is the signature of a database too slow to record them,
// not of pods gone. An alive or late owner without a pod in the view (a
// hostNetwork worker named after its node, a worker on a VM, a pod created
// after the list) shows only that this owner lives outside the view: it
// keeps the heartbeat rules (rowRule), and the others their pod evidence.
func viewAnchored(rows map[string]AppStatus, now time.Time, grace time.Duration, v *PodView) bool {
	for _, r := range rows {
		_, host, ok := podOwner(r)
		if !ok || r.Liveness(now, grace) != Alive {
			continue
		}
		if _, found, _ := v.lookup(host); found {
			return true
		}
	}
	return false
}
