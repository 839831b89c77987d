package judge

import "github.com/lock-reaper/lock-reaper/heartbeat"

// FleetOf judges the liveness of the snapshot's owners: by their heartbeats,
// then by the pass's pods when it read them.
func FleetOf(snap Snapshot, p Policy) *heartbeat.Fleet {
	return heartbeat.NewFleet(snap.AppStatuses, snap.Now, p.HeartbeatGrace).WithPods(snap.Pods, p.Kubernetes)
}
