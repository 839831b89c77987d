package kube

import "github.com/lock-reaper/lock-reaper/heartbeat"

// When the watch starts a pass. This decides no verdict: the pass it starts
// judges the rows by the pod rules (heartbeat/pod_rules.go), which make the
// ended incarnation's rows dead at once (container-ended,
// container-restarted). It only saves the wait for the next tick.

// IncarnationEnded says the pod's status shows, as the kubelet reports it,
// that an incarnation of its worker or API container ended: state
// terminated, or a restartCount above zero (after a restart the kubelet
// keeps the end in lastState.terminated). A pod object that merely
// disappeared, or lost Ready, shows nothing.
func IncarnationEnded(p heartbeat.Pod) bool {
	return endReported(p.Container) || endReported(p.API)
}

func endReported(c *heartbeat.Container) bool {
	return c != nil && (c.Terminated != nil || c.Restarts > 0)
}

// IncarnationEndedSince says now shows an incarnation end that before (the
// same pod's earlier status; nil when none was seen) did not: a terminated
// state newly reported, a restart count grown, or a later end.
func IncarnationEndedSince(before *heartbeat.Pod, now heartbeat.Pod) bool {
	if before == nil || before.UID != now.UID {
		return IncarnationEnded(now)
	}
	return endedSince(before.Container, now.Container) || endedSince(before.API, now.API)
}

func endedSince(before, now *heartbeat.Container) bool {
	if !endReported(now) {
		return false
	}
	if before == nil || !endReported(before) {
		return true
	}
	if now.Restarts > before.Restarts {
		// One restart after an end already reported (before's terminated
		// state is now's lastState) shows no new end; more restarts, or one
		// whose end was never reported, do.
		return now.Restarts > before.Restarts+1 || !sameEnd(before.Terminated, now.LastTerminated)
	}
	b, _, bok := before.EndedBefore()
	n, _, nok := now.EndedBefore()
	return nok && (!bok || n.After(b))
}

// sameEnd says two reported terminations are one incarnation's end.
func sameEnd(a, b *heartbeat.Termination) bool {
	return a != nil && b != nil && a.FinishedAt != nil && b.FinishedAt != nil && a.FinishedAt.Equal(*b.FinishedAt)
}
