package sim

import (
	"context"
	"errors"
	"fmt"
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

type holdingRef struct{ owner, key string }

type selfRelease struct {
	inFlight int       // releases under way
	last     time.Time // when the last one finished
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

// AddWorker starts one more worker and returns its name.
func (f *Fleet) AddWorker(ctx context.Context) (string, error) {
	p, err := f.addProcess(ctx, AppTypeWorker)
	if err != nil {
		return "", err
	}
	return p.name, nil
}

func (f *Fleet) addProcess(ctx context.Context, appType string) (*process, error) {
	f.mu.Lock()
	index := 0
	for _, p := range f.procs {
		if p.appType == appType {
			index++
		}
	}
	ttl := f.cfg.WorkerTTL
	if appType == AppTypeAPI {
		ttl = f.cfg.APITTL
	}
	p := &process{f: f, appType: appType, ttl: ttl}
	if f.cfg.Pods.Enabled {
		p.pod, p.name = f.newPod(appType)
	} else {
		// pids are drawn like a container's: small numbers, unrelated across hosts.
		pid := 1 + f.rng.IntN(999)
		p.name = fmt.Sprintf("%d@%s-%s-%d", pid, f.cfg.Hostname, appType, index)
	}
	if _, dup := f.byName[p.name]; dup {
		f.mu.Unlock()
		return nil, fmt.Errorf("sim: process name %s already used", p.name)
	}
	f.procs = append(f.procs, p)
	f.byName[p.name] = p
	f.mu.Unlock()
	if err := p.launch(ctx); err != nil {
		return nil, err
	}
	return p, nil
}

// ProcessInfo describes one simulated process.
type ProcessInfo struct {
	// Name is the AppStatus name and lock owner name, "<pid>@<host>".
	Name    string
	AppType string
	// AppStatusID is the pulp_id of the current incarnation's row.
	AppStatusID string
	// Alive is false after the process was killed and before a restart.
	Alive bool
	// Incarnation counts starts: 1 for the original, 2 after one restart.
	Incarnation int
	// Pod is the name of the process's pod with Config.Pods, else empty.
	Pod string
}

// Processes lists every worker and API process.
func (f *Fleet) Processes() []ProcessInfo {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]ProcessInfo, 0, len(f.procs))
	for _, p := range f.procs {
		info := ProcessInfo{Name: p.name, AppType: p.appType, Alive: !p.killed, Incarnation: p.incarnations}
		if p.cur != nil {
			info.AppStatusID = p.cur.rowID
		}
		if p.pod != nil {
			info.Pod = p.pod.name
		}
		out = append(out, info)
	}
	return out
}

// Workers returns the names of the workers, in creation order.
func (f *Fleet) Workers() []string { return f.names(AppTypeWorker) }

// APIs returns the names of the API processes, in creation order.
func (f *Fleet) APIs() []string { return f.names(AppTypeAPI) }

func (f *Fleet) names(appType string) []string {
	var out []string
	for _, p := range f.Processes() {
		if p.AppType == appType {
			out = append(out, p.Name)
		}
	}
	return out
}

// Kill kills a process as kill -9 would: its goroutines end at once, its
// heartbeats stop, its row, claims and locks stay. It returns once the
// process's goroutines are gone.
func (f *Fleet) Kill(name string) error {
	inc, err := f.markKilled(name)
	if err != nil {
		return err
	}
	inc.cancel()
	<-inc.done
	f.recordFault(FaultKill, name, "", "killed on request")
	return nil
}

// markKilled flags the current incarnation of a process as dead.
func (f *Fleet) markKilled(name string) (*incarnation, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p, ok := f.byName[name]
	switch {
	case !ok:
		return nil, fmt.Errorf("sim: no process %s", name)
	case p.killed || p.cur == nil:
		return nil, fmt.Errorf("sim: process %s is not running", name)
	}
	p.killed = true
	if p.pod != nil {
		p.pod.endContainer(time.Now())
	}
	return p.cur, nil
}

// Restart starts a killed process again under the same name, with a new
// AppStatus row, like a container restarted with the same pid and hostname;
// with Config.Pods its container's start and restart count say so.
// With Config.RestartReleasesOwnLocks it first releases the locks registered
// under its name, as pulpcore does.
func (f *Fleet) Restart(ctx context.Context, name string) error {
	f.mu.Lock()
	p, ok := f.byName[name]
	if !ok {
		f.mu.Unlock()
		return fmt.Errorf("sim: no process %s", name)
	}
	if !p.killed || p.restarting {
		f.mu.Unlock()
		return fmt.Errorf("sim: process %s is running", name)
	}
	if p.pod != nil && p.pod.deleted {
		f.mu.Unlock()
		return fmt.Errorf("sim: the pod of process %s was deleted; its replacement runs under another name", name)
	}
	p.restarting = true
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		p.restarting = false
		f.mu.Unlock()
	}()

	if f.cfg.RestartReleasesOwnLocks {
		keys, err := f.rdb.SMembers(ctx, OwnerLocksKey(name)).Result()
		if err != nil {
			return fmt.Errorf("read registry of %s: %w", name, err)
		}
		done := f.noteSelfRelease(name, keys)
		_, _, err = CleanupOwner(ctx, f.rdb, name)
		done()
		if err != nil {
			return err
		}
	}
	if err := p.launch(ctx); err != nil {
		return err
	}
	f.recordFault(FaultRestart, name, "", fmt.Sprintf("incarnation %d", p.incarnation()))
	return nil
}

// DelayHeartbeat holds the process's next heartbeat until gap after its last
// one. A gap above the ttl makes the process late; keep it below ttl +
// HeartbeatGrace for a process that must not be reaped.
func (f *Fleet) DelayHeartbeat(name string, gap time.Duration) error {
	f.mu.Lock()
	p, ok := f.byName[name]
	var inc *incarnation
	if ok && !p.killed {
		inc = p.cur
	}
	f.mu.Unlock()
	if inc == nil {
		return fmt.Errorf("sim: process %s is not running", name)
	}
	inc.holdHeartbeat(gap)
	f.recordFault(FaultHeartbeatDelay, name, "", "gap "+gap.String())
	return nil
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

// Violations returns every safety violation the fleet's processes saw: a
// holding of a task they were actively working on that vanished although
// nothing excused it.
func (f *Fleet) Violations() []Violation {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Violation(nil), f.violations...)
}

// noteSelfRelease marks owner's holdings of keys as being released by the
// fleet itself; call the returned function once the release is done. While it
// runs, and afterwards, a check that finds one of them gone is excused: the
// check cannot tell whether it ran before or after the release.
func (f *Fleet) noteSelfRelease(owner string, keys []string) (done func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, k := range keys {
		r := f.selfReleased[holdingRef{owner, k}]
		r.inFlight++
		f.selfReleased[holdingRef{owner, k}] = r
	}
	return func() {
		now := time.Now()
		f.mu.Lock()
		defer f.mu.Unlock()
		for _, k := range keys {
			r := f.selfReleased[holdingRef{owner, k}]
			r.inFlight--
			r.last = now
			f.selfReleased[holdingRef{owner, k}] = r
		}
	}
}

// selfReleasedSince reports whether the fleet itself released owner's holding
// of key at or after since, or is releasing it now.
func (f *Fleet) selfReleasedSince(owner, key string, since time.Time) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, ok := f.selfReleased[holdingRef{owner, key}]
	return ok && (r.inFlight > 0 || !r.last.Before(since))
}

// SelfRelease is one release the fleet itself made of holdings of some
// owner on its behalf, outside that owner's own protocol steps: an API
// process canceling a waiting, unclaimed task releases the task's locks under
// whatever owner its task key names (Cancel, also the dispatcher's random
// cancels). A lock a fault leaked can go that way rather than by a reaper.
// A restart's cleanup (Config.RestartReleasesOwnLocks) is not listed.
type SelfRelease struct {
	// By is the owner name of the process that released.
	By string
	// Owner is the owner whose holdings were released.
	Owner string
	Task  string
	// Keys are the lock keys the release actually took from Owner; keys
	// Owner no longer held are not listed.
	Keys []string
	At   time.Time
}

// SelfReleases returns every release the fleet itself made of another
// owner's holdings so far, in order; releases that took nothing are left out.
func (f *Fleet) SelfReleases() []SelfRelease {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]SelfRelease(nil), f.selfReleases...)
}

func (f *Fleet) recordSelfRelease(by, owner, task string, keys []string) {
	if len(keys) == 0 {
		return
	}
	f.mu.Lock()
	f.selfReleases = append(f.selfReleases, SelfRelease{By: by, Owner: owner, Task: task, Keys: keys, At: time.Now()})
	f.mu.Unlock()
	f.log.Info("released another owner's locks", "by", by, "owner", owner, "task", task, "keys", keys)
}

// noteError counts and logs an unexpected error of a simulated process. An
// error because the process was killed or the fleet stopped is no surprise
// and is dropped.
func (f *Fleet) noteError(ctx context.Context, who, what string, err error) {
	if ctx.Err() != nil || errors.Is(err, context.Canceled) {
		return
	}
	f.counters.errors.Add(1)
	f.log.Warn("simulated process error", "process", who, "step", what, "error", err)
}

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
