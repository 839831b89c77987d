package judge

// FleetOf judges the liveness of the snapshot's owners: by their heartbeats,
// then by the pass's pods when it read them.
func FleetOf(snap Snapshot, p Policy) *Fleet {
	return NewFleet(snap.AppStatuses, snap.Now, p.HeartbeatGrace).WithPods(snap.Pods, p.Kubernetes)
}
