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

// holdsLife says the pod proves the row's process alive: the pod can run,
// and its container runs without restart since no later than the row's
// creation + margin, so the running process is the one that created the row.
func holdsLife(r AppStatus, p Pod, margin time.Duration) bool {
	c := containerOf(p, r.AppType)
	return p.CouldRun() && c != nil && c.Running && c.StartedAt != nil &&
		!r.PulpCreated.IsZero() && !c.StartedAt.After(r.PulpCreated.Add(margin))
}

// rowRule applies the rules to one row: the rule that decided and the row's
// liveness after it. trusted says the view may prove a pod's absence or an
// incarnation's end (viewTrusted).
func rowRule(r AppStatus, live Liveness, now time.Time, grace time.Duration, v *PodView, rules PodPolicy, trusted bool) (PodRule, Pod, Liveness) {
	pid, host, ok := podOwner(r)
	if !ok {
		return "", Pod{}, live
	}
	pod, found, ambiguous := v.lookup(host)
	if !found {
		gone := Pod{Name: host, UID: v.seen[host].UID}
		switch {
		case live == Alive:
			return PodOutsideView, gone, live
		case ambiguous || !trusted || !v.SeenBefore(host):
			return PodNotInView, gone, live
		}
		return PodGone, gone, Dead
	}
	if trusted {
		if rule, ok := endedRule(r, pod, rules.ClockSkew); ok {
			return rule, pod, Dead
		}
	}
	if live == Dead && pid == "1" && holdsLife(r, pod, rules.ClockSkew) {
		if now.Sub(r.LastHeartbeat) <= r.TTL+grace+rules.HungWorkerGrace {
			return PodAliveNotHeartbeating, pod, Late
		}
		return PodHungTooLong, pod, live
	}
	return PodSeen, pod, live
}

// viewTrusted says the view may prove that a pod is gone or that an
// incarnation ended: at least one worker or API row is alive, every alive
// row's pod is in the view, and every late row's pod is in the view or was in
// an earlier one. A heartbeat (fresh or late) of a host the view never
// showed means the selector or namespace misses part of the fleet (a VM
// worker, another namespace, a relabelled pod) or the list is another
// cluster's; a fleet with no fresh heartbeat at all is the signature of a
// database too slow to record them, not of pods gone. Dead rows are left
// out: pulpcore keeps them for minutes after a rolling restart.
func viewTrusted(rows map[string]AppStatus, now time.Time, grace time.Duration, v *PodView) bool {
	alive := 0
	for _, r := range rows {
		live := r.Liveness(now, grace)
		_, host, ok := podOwner(r)
		if !ok || live == Dead {
			continue
		}
		_, found, ambiguous := v.lookup(host)
		switch {
		case live == Alive && !found:
			return false
		case live == Alive:
			alive++
		case !found && !ambiguous && !v.SeenBefore(host):
			return false
		}
	}
	return alive > 0
}
