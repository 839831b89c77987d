// Package heartbeat decides whether a Pulp process is alive, from the row it
// keeps in core_appstatus: every worker and API process writes its row's
// last_heartbeat well within its ttl (a worker every ttl/3), and a row past
// its ttl + grace is dead. A lock in Redis names its owner as the row does
// ({pid}@{hostname}), so whether an owner's locks may be released rests on
// this package's answer.
//
// The rules are pure: they take the rows and the database's now (never a
// clock of their own, nor a query, nor a Kubernetes call; purity_test.go
// checks it), so that every pass, the daemon and the tests judge the same
// rows the same way.
//
//   - AppStatus is one row; its Liveness at now is Alive (within ttl), Late
//     (within ttl + grace: a slow heartbeat is not a death) or Dead, and a
//     name no row carries is Gone (liveness.go).
//   - Fleet (NewFleet) is the liveness of every row and owner name at one
//     instant, and what the mass-death guard weighs (WorkerRows); a name
//     with several rows takes its best one (fleet.go).
//   - Settle compares two Readings at least a heartbeat period apart: a row that
//     moved is alive, one that stopped with others that came back is a
//     stall, and only an unmoved row is a settled death (motion.go). A
//     death by age alone could be a stalled write or a worker's clock behind.
//   - PodView is one complete list of the fleet's pods; it proves a death
//     sooner (pod gone, container ended) or holds a hung worker as late for
//     a while (pods.go, pod_rules.go). heartbeat/kube lists and watches them.
//   - DeathAt, DiedBetween and NextDeath say when a row crosses into dead,
//     so that the daemon starts a pass then rather than at its next tick
//     (crossing.go).
//
// A pass reads the rows and the database's now with the rest of its
// snapshot (reaper/pulpdb), builds the Fleet, applies the pod view
// (WithPods) and, for the rows found dead, a second read (Settle,
// WithMotion); reaper/judge then turns the owners' liveness into verdicts
// on their locks. docs/verdicts.md states the rules and their sources.
package heartbeat
