// Package redislocks is lock-reaper's access to the locks pulpcore keeps in
// Redis: it reads them, releases the ones the judge condemns, and keeps the
// little state passes share. It decides nothing: which holding goes is
// reaper/judge's verdict; this package carries it out so that a lock
// taken again since the snapshot is never the one released.
//
// Pulp's locks are task:<uuid> and pulp:resource_lock:<name> keys, a string
// holding the owner's name or, for a shared reservation, a set of owners.
// Newer pulpcore also lists each owner's keys in a registry
// (pulp:owner_locks:<owner>) and the owner in pulp:active_owners; locks of
// older workers have no registry entry and are found only by a SCAN
// (docs/pulp-protocol.md).
//
//   - Reader.Read collects the holdings from the registries and, on a full
//     scan, a SCAN of the keyspace (locks taken by older pulpcore, with no
//     registry), in pipelined batches, and reports what under a lock prefix
//     is not a lock (Ignored) without touching it (read.go, values.go,
//     set_members.go).
//   - RecheckImmediateLocks reads again, after the database, the task locks
//     an immediate task may have taken in between (torn_read.go).
//   - Releaser.Release runs one Lua call per batch (release_script.go): a
//     string lock goes only while it still names the observed owner, a set
//     loses only that member, and a guarded holding (a live or late
//     owner's) only while the owner took no task since the snapshot
//     (RememberSeen) and holds no lock of a task that reserves the resource
//     (Reserver). Every call does bounded work, as a script blocks Redis
//     while it runs (registry_prune.go, release_budget.go).
//   - PublishCancelSignals sets pulpcore's cancel signal of each task the
//     pass finished; on a primary other than the last one checked (a
//     failover), RepublishMissingCancelSignals sets again the ones missing,
//     which the old primary may have lost (cancel_signal.go,
//     primary_identity.go).
//   - RetireOwners leaves pulp:active_owners and the registries as
//     pulpcore's own cleanup would for owners without a live row (retire.go).
//   - CheckPrimary refuses a replica or a Sentinel before the first write
//     (role.go); every script that writes first asks Redis whether the
//     user may run each of its commands, so that an ACL refusal changes
//     nothing (acl_check.go).
//   - lock-reaper's own keys under pulp:lock_reaper: remember across passes
//     and replicas the suspects, the rows seen alive, the pods seen and the
//     uncommitted writes seen, each a hash with an expiry (suspects.go,
//     seen_alive.go, pods_seen.go, open_writes.go).
//
// A pass reads Redis before the database (Reader.Read, then the snapshot of
// reaper/pulpdb, then RecheckImmediateLocks, whose late read may only
// protect a task, never condemn one). Once the judge has made its plan it
// releases in batches (Release), then updates the tasks in PostgreSQL,
// publishing each batch's cancel signals once its update is committed,
// retires the owners left with nothing, and writes back what it remembers.
package redislocks
