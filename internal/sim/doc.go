// Package sim simulates a Pulp fleet that speaks pulpcore's Redis lock
// protocol and task-table protocol for real, against a real Redis and a real
// PostgreSQL database holding pulpcore's schema.
//
// It has four layers, each usable on its own:
//
//   - Protocol primitives (Acquire, AcquireLegacy, Release, CleanupOwner) are
//     the atomic Lua scripts pulpcore runs, written from the protocol
//     description rather than copied, so that lock-reaper's tests exercise the
//     same Redis state a real fleet leaves behind.
//   - Fleet runs worker and API processes as goroutines: AppStatus rows with
//     database-clock heartbeats, fetch/acquire/claim/run/release, immediate
//     tasks, cancellation, a dispatcher, and the leak paths of the protocol as
//     faults on demand or at seeded random rates; worker versions that strand
//     the tasks a worker is too old for (versions.go), and a worker's
//     shutdown on SIGTERM with a grace period, on a failed heartbeat write or
//     on a failed Redis PING (shutdown.go). Every worker checks before
//     each protocol step that its locks are still its own, so a reaper that
//     releases a healthy holding is caught as a Violation.
//   - BuildIncident and BuildFleet write large static states in bulk
//     (pipelined Redis, PostgreSQL COPY) for the incident demo and benchmarks,
//     and return a manifest of what a correct reaper must do with them.
//   - ScanHoldings, CheckConverged and CheckRegistry read the shared state
//     back, for assertions about liveness and bookkeeping.
//
// The package never imports lock-reaper's own packages: it plays Pulp, and
// lock-reaper's tests import it, so a shared dependency would both blur which
// side a behaviour belongs to and risk an import cycle.
package sim
