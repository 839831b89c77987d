package judge

import (
	"time"

	"github.com/lock-reaper/lock-reaper/heartbeat"
)

// NextChange is the earliest moment after the snapshot's now (database
// clock) at which a verdict of this plan can change with nothing else
// changing: a suspect's confirm_after elapses, a finished task's lock
// leaves its finished_grace, a worker held alive by Kubernetes passes
// hung_worker_grace, or a row held for a second read of its heartbeat can
// be read again. Zero when nothing is pending. It decides when the daemon
// runs its next pass, never a verdict.
//
// A row crossing ttl + heartbeat_grace (late to dead) is not among them:
// the daemon reads the rows themselves every heartbeat_poll and starts a
// pass when one crossed (heartbeat.DiedBetween). The crossing the snapshot
// foresaw is that of a row that may beat again: every live worker's, a
// minute on, which started a pass for nothing in about every other minute
// of an idle sidecar.
func NextChange(snap Snapshot, plan Plan, p Policy) time.Time {
	var next time.Time
	consider := func(at time.Time) {
		if at.After(snap.Now) && (next.IsZero() || at.Before(next)) {
			next = at
		}
	}
	for _, s := range plan.Suspects {
		consider(s.FirstSeen.Add(p.ConfirmAfter))
	}
	for _, h := range snap.Holdings {
		if h.Kind != KindTask {
			continue
		}
		if t, ok := snap.Tasks[h.TaskID()]; ok && Final(t.State) && t.FinishedAt != nil {
			consider(t.FinishedAt.Add(p.FinishedGrace))
		}
	}
	// Rows held for want of a second read, or while their group comes
	// back, are read again a period on.
	var held []string
	for _, id := range snap.Motion.Rows() {
		if rm, _ := snap.Motion.Of(id); rm.Settlement == heartbeat.Stalled || rm.Settlement == heartbeat.Unsettled {
			held = append(held, id)
		}
	}
	if len(held) > 0 {
		consider(snap.Now.Add(RecheckAfter(snap.AppStatuses, held, p)))
	}
	if snap.Pods != nil {
		for _, r := range snap.AppStatuses {
			consider(r.DeathAt(p.HeartbeatGrace).Add(p.Kubernetes.HungWorkerGrace))
		}
	}
	return next
}
