package sim

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
)

// Fleet is a simulated Pulp installation: worker processes, API processes and
// a dispatcher, all goroutines speaking the real protocol against one Redis
// and one PostgreSQL database.
//
// Stopping the fleet (Stop) ends every goroutine at once, like pulling the
// plug: rows, tasks and locks stay as they were, and the rows stop beating.
type Fleet struct {
	cfg   Config
	rdb   redis.UniversalClient
	pool  *pgxpool.Pool
	log   *slog.Logger
	rng   *lockedRand
	repos []string // resource names random tasks choose from

	faultRates atomic.Pointer[FaultRates]
	dispatch   atomic.Pointer[DispatchConfig]
	dbDelay    atomic.Int64
	// taskVersions are what dispatched tasks need (SetTaskVersions).
	taskVersions atomic.Pointer[Versions]
	// expectErrors counts the processes' errors as expected (ExpectErrors).
	expectErrors atomic.Bool
	// locksLostAt (unix ns) is when Redis last lost every key (LocksLost).
	locksLostAt atomic.Int64

	mu          sync.Mutex
	started     bool
	stopped     bool
	ctx         context.Context // the fleet's life; canceled by Stop
	cancel      context.CancelFunc
	wg          sync.WaitGroup
	stopOnce    sync.Once
	procs       []*process // workers then APIs, in creation order
	byName      map[string]*process
	armed       map[FaultKind]int
	faults      []FaultEvent
	faultCounts map[FaultKind]int64
	faultSignal chan struct{} // closed and replaced at every fault
	violations  []Violation
	// selfReleased remembers when the fleet itself (an API canceling a task,
	// a restart's cleanup) released a holding of some owner, so that the
	// owner's safety check does not blame the reaper for it.
	selfReleased map[holdingRef]selfRelease
	// selfReleases lists, in order, the holdings the fleet itself released
	// on behalf of another process (SelfReleases).
	selfReleases []SelfRelease
	// active is the work of live processes, for ActiveHoldings (active.go).
	active map[*job]activeJob
	// podHashes are the pod-template hashes of the Deployments, by app type.
	podHashes map[string]string

	counters counters
}

// New validates cfg and returns a fleet that has not started yet.
func New(rdb redis.UniversalClient, pool *pgxpool.Pool, cfg Config) (*Fleet, error) {
	if rdb == nil || pool == nil {
		return nil, errors.New("sim: New needs a Redis client and a PostgreSQL pool")
	}
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	f := &Fleet{
		cfg:          cfg,
		rdb:          rdb,
		pool:         pool,
		log:          cfg.Logger,
		rng:          newLockedRand(cfg.Seed),
		byName:       map[string]*process{},
		armed:        map[FaultKind]int{},
		faultCounts:  map[FaultKind]int64{},
		faultSignal:  make(chan struct{}),
		selfReleased: map[holdingRef]selfRelease{},
		podHashes:    map[string]string{},
	}
	for range cfg.Repositories {
		f.repos = append(f.repos, RepositoryPRN(f.rng.UUID()))
	}
	rates, dispatch := cfg.Faults, cfg.Dispatch
	f.faultRates.Store(&rates)
	f.dispatch.Store(&dispatch)
	f.dbDelay.Store(int64(cfg.DBDelay))
	return f, nil
}

// Start registers the configured processes (one core_appstatus row each) and
// starts their goroutines and the dispatcher. They run until Stop or until
// ctx ends. Starting twice does nothing.
func (f *Fleet) Start(ctx context.Context) error {
	f.mu.Lock()
	if f.started {
		f.mu.Unlock()
		return nil
	}
	if f.stopped {
		f.mu.Unlock()
		return errors.New("sim: fleet already stopped")
	}
	f.started = true
	f.ctx, f.cancel = context.WithCancel(ctx)
	f.mu.Unlock()

	for range f.cfg.Workers {
		if _, err := f.addProcess(ctx, AppTypeWorker); err != nil {
			f.Stop()
			return err
		}
	}
	for range f.cfg.APIs {
		if _, err := f.addProcess(ctx, AppTypeAPI); err != nil {
			f.Stop()
			return err
		}
	}
	f.spawn(f.dispatchLoop)
	return nil
}

// Stop ends every goroutine of the fleet and returns once they are gone. It
// writes nothing: the fleet's rows and locks stay, as after a power cut. Stop
// may be called any number of times, also before Start.
func (f *Fleet) Stop() {
	f.stopOnce.Do(func() {
		f.mu.Lock()
		f.stopped = true
		cancel := f.cancel
		f.mu.Unlock()
		if cancel != nil {
			cancel()
		}
		f.wg.Wait()
	})
}

// spawn runs fn in a goroutine that Stop waits for, unless the fleet is
// stopping; adding to the WaitGroup only under the mutex, before Stop sets
// stopped, keeps Add from racing with Wait.
func (f *Fleet) spawn(fn func(ctx context.Context)) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stopped || !f.started {
		return false
	}
	ctx := f.ctx
	f.wg.Go(func() { fn(ctx) })
	return true
}

// SetDBDelay changes the sleep before each of the fleet's database statements.
func (f *Fleet) SetDBDelay(d time.Duration) { f.dbDelay.Store(int64(max(d, 0))) }

// SetDispatch changes the dispatcher's rates, e.g. to zero to let the queue
// drain before checking convergence.
func (f *Fleet) SetDispatch(d DispatchConfig) error {
	if err := d.validate(); err != nil {
		return err
	}
	f.dispatch.Store(&d)
	return nil
}

// noteError counts and logs an unexpected error of a simulated process. An
// error because the process was killed or the fleet stopped is no surprise
// and is dropped.
func (f *Fleet) noteError(ctx context.Context, who, what string, err error) {
	if ctx.Err() != nil || errors.Is(err, context.Canceled) {
		return
	}
	if f.expectErrors.Load() {
		f.counters.expectedErrors.Add(1)
		f.log.Info("simulated process error during an outage", "process", who, "step", what, "error", err)
		return
	}
	f.counters.errors.Add(1)
	f.log.Warn("simulated process error", "process", who, "step", what, "error", err)
}

// ExpectErrors says whether the processes' errors from now on are expected,
// as during a database or Redis outage a test causes: they are counted in
// Stats.ExpectedErrors instead of Stats.Errors.
func (f *Fleet) ExpectErrors(on bool) { f.expectErrors.Store(on) }

// api returns a live API process, or nil.
func (f *Fleet) api() *incarnation {
	f.mu.Lock()
	defer f.mu.Unlock()
	var live []*incarnation
	for _, p := range f.procs {
		if p.appType == AppTypeAPI && !p.killed && p.cur != nil {
			live = append(live, p.cur)
		}
	}
	if len(live) == 0 {
		return nil
	}
	return live[f.rng.IntN(len(live))]
}
