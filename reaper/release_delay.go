package reaper

import (
	"time"

	"github.com/lock-reaper/lock-reaper/heartbeat"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
)

// releaseDelays measures, for each owner judged dead whose holdings this pass
// released, how long after the moment the rules allowed it the release came:
// from its death by heartbeat (the newest row's last heartbeat + ttl +
// grace), or from its container's end or restart the kubelet reported
// (node clock) when the pods proved it sooner; to the snapshot's now. An
// owner the pods proved dead without a time (pod-terminal) is not measured.
// It is a measurement for the metrics, never a verdict.
func releaseDelays(rows []heartbeat.AppStatus, now time.Time, plan *judge.Plan, rep *Report, grace time.Duration) []time.Duration {
	released := map[string]bool{}
	for _, f := range rep.Findings {
		if f.Result == ResultReleased && f.Verdict == judge.VerdictOwnerDead {
			released[f.Owner] = true
		}
	}
	if len(released) == 0 {
		return nil
	}
	deathAt := map[string]time.Time{}
	for _, r := range rows {
		if at := r.DeathAt(grace); released[r.Name] && at.After(deathAt[r.Name]) {
			deathAt[r.Name] = at
		}
	}
	var out []time.Duration
	for _, o := range plan.FleetOwners {
		at, ok := deathAt[o.Name]
		if !ok {
			continue
		}
		if e := o.Kubernetes; e != nil {
			switch e.Rule {
			case heartbeat.PodTerminal:
				continue
			case heartbeat.PodContainerEnded, heartbeat.PodRestarted:
				if end, _, ok := containerFor(e).EndedBefore(); ok && end.Before(at) {
					at = end
				}
			}
		}
		out = append(out, max(now.Sub(at), 0))
	}
	return out
}

// containerFor is the container of the evidence's pod whose end the rules
// weighed: the worker's, or the API's for a pod with only that one.
func containerFor(e *heartbeat.PodEvidence) *heartbeat.Container {
	if e.Container != nil {
		return e.Container
	}
	return e.API
}
