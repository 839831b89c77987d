package sim_test

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/lock-reaper/lock-reaper/internal/sim"
)

// A chaos test: a fleet with random faults beside the reaper under test,
// then faults and dispatch stop and the state must converge.
func ExampleFleet() {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379", DB: 1})
	pool, _ := pgxpool.New(ctx, "postgres://postgres@127.0.0.1:5432/lr_test")

	f, err := sim.New(rdb, pool, sim.Config{
		Workers:        5,
		WorkerTTL:      2 * time.Second,
		HeartbeatGrace: 2 * time.Second, // the reaper's heartbeat_grace
		Seed:           42,
		Dispatch:       sim.DispatchConfig{Rate: 50, ImmediateFraction: 0.1, CancelRate: 2},
		Faults:         sim.FaultRates{LeakBeforeClaim: 0.02, FinalNoRelease: 0.02, Kill: 0.01, RestartAfter: time.Second},
	})
	if err != nil {
		panic(err)
	}
	if err := f.Start(ctx); err != nil {
		panic(err)
	}
	defer f.Stop()

	// ... run reaper passes while the fleet works ...

	_ = f.SetFaultRates(sim.FaultRates{})
	_ = f.SetDispatch(sim.DispatchConfig{})
	// ... let the reaper run two passes plus confirm_after, then poll:
	problems, _ := sim.CheckConverged(ctx, rdb, pool)
	fmt.Println(len(problems), len(f.Violations()))
}

// The incident demo: one dead worker with 543 task locks and 524 resource
// locks beside live workers and a queue.
func ExampleBuildIncident() {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379", DB: 1})
	pool, _ := pgxpool.New(ctx, "postgres://postgres@127.0.0.1:5432/lr_demo")

	inc, err := sim.BuildIncident(ctx, rdb, pool, sim.IncidentOf20260724())
	if err != nil {
		panic(err)
	}
	live, stop := context.WithCancel(ctx)
	defer stop()
	go inc.KeepAlive(live, pool) // error dropped: ends with the demo

	// ... run the reaper, then check the manifest: every inc.Stale holding
	// gone, every inc.Healthy one kept, inc.Cancel canceled, inc.Requeue
	// waiting with app_lock NULL.
	fmt.Println(sim.Count(inc.Stale, inc.DeadOwner, sim.KindTask))
}
