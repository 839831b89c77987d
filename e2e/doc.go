// Package e2e runs lock-reaper beside a simulated Pulp fleet (package sim)
// against a real Redis and a real PostgreSQL, with random faults of every
// kind the simulator knows, and checks the three promises an operator relies
// on:
//
//   - safety: no live process ever loses a holding of a task it is working on
//     (the fleet's own checks, Fleet.Violations), and no holding a reaper pass
//     reports as released was, throughout that pass, part of the work of a
//     process whose heartbeat was fresh (Fleet.ActiveHoldings before and after
//     each pass);
//   - liveness: once faults and dispatch stop, the shared state converges
//     (sim.CheckConverged) within a few passes, and the queue drains;
//   - accounting: the holdings the release script reported released on the
//     wire are exactly the findings the reports call released; every holding
//     a fault leaked was released by the reaper (or by the fleet's own cancel);
//     every task the reaper changed is in a report as updated, and nothing else.
//
// The package holds tests only. A run is seeded: -seed N or REAPER_E2E_SEED
// repeat one (goroutine scheduling still varies); every failure names the
// seed. The short tests run in CI; the soak runs for the -soak duration:
//
//	go test ./e2e -run Soak -soak 10m -timeout 30m -v
package e2e
