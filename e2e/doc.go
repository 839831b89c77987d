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
//
// TestDay (CI) and TestSoakDay (-soak-day DURATION, `make soak-day`) run an
// ordinary day compressed 15 times (worker ttl 2 s for 30 s; a 90 s window
// lasts 6 s) on a Redis server of their own: a rolling upgrade whose new API
// processes dispatch tasks that the old workers claim and strand, scale-up,
// scale-down (SIGTERM, a grace period, SIGKILL for a task that outlives it),
// a read-only database window (each session's default_transaction_read_only,
// set by the pools' PrepareConn: heartbeat writes fail and the workers shut
// down), a heartbeat stall (LOCK TABLE core_appstatus IN SHARE MODE: writes
// wait, nobody shuts down), a Redis restart without persistence (every lock
// lost; PING fails and the workers shut down) and a same-name restart. Each
// day at least one task process hangs 8 s before set_running, and a user
// cancels a stranded task. The soak leaves 5 s between events and replaces a worker
// every 2 s; CI's short form leaves 2 s and replaces one a second; both
// dispatch 10 tasks a second, below what the workers run, so that no backlog
// builds up. Beside the promises above it checks, with the mass-death guard
// on at 0.9:
//
//   - no task a live process worked on throughout a pass is updated by it;
//   - a pass fails only within an outage window (+2 s);
//   - a dead worker's locks are gone within ttl + grace + a heartbeat period,
//     plus heartbeat_recheck, two pass gaps and a pass (7.8 s here);
//   - a stranded task is requeued within confirm_after + three pass gaps + a
//     pass (7 s) of a compatible worker being online, unless something else
//     ended it first (its worker's row deleted on SIGTERM unclaims it, a
//     cancel makes it stuck-canceling, which the reaper cancels). A task
//     stranded again before a requeue (unclaimed with its worker's row,
//     then claimed by another old worker) counts once per stranding: the
//     requeue ends the latest stranding before its pass began, the one its
//     conditional write saw, and the earlier ones ended otherwise;
//   - a stranded task a user canceled (canceling, claimed by a live worker
//     that never runs it) is canceled as stuck-canceling within the same
//     7 s of the later of the cancel and the stranding; one whose worker
//     died or shut down first is canceled as lost;
//   - a task whose process hangs before set_running is reported
//     claimed-not-started within the same 7 s, and never written, unless its
//     worker died or shut down first, or a user canceled it (canceling, its
//     worker finishes the cancel);
//   - at the end every task is final and no lock is left (the drain).
//
// Each clock starts at the end of an outage window the case overlaps; a
// bound may be exceeded by a minute (a loaded CI machine with -race) before
// the test fails, and the figures say how many cases met the bound itself.
package e2e
