package sim

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lock-reaper/lock-reaper/internal/ctxwait"
)

// process is one simulated Pulp process with a stable name: a worker or an
// API process. Its fields below mu-guarded ones change only under Fleet.mu.
type process struct {
	f       *Fleet
	appType string
	name    string
	ttl     time.Duration
	// versions are the plugin versions its rows record (workers only).
	versions Versions

	// Guarded by Fleet.mu.
	pod        *podState // nil without Config.Pods
	cur        *incarnation
	killed     bool
	restarting bool
	// removed: scaled down (Terminate); nothing restarts it.
	removed      bool
	incarnations int

	// immediateMu runs an API process's immediate tasks one at a time: two
	// concurrent tasks of one owner sharing a resource would share one set
	// membership, and the first release would take it from the second.
	immediateMu sync.Mutex
}

func (p *process) incarnation() int {
	p.f.mu.Lock()
	defer p.f.mu.Unlock()
	return p.incarnations
}

// incarnation is one run of a process: one core_appstatus row, one context,
// its goroutines. A kill ends it; a restart makes a new one.
type incarnation struct {
	p      *process
	rowID  string
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{} // closed when all its goroutines are gone

	// lastBeat is the local time (unix ns) just before the last heartbeat
	// that succeeded was sent: never later than the database's now() for it,
	// so the age computed from it errs towards "late".
	lastBeat atomic.Int64
	// holdUntil (unix ns) delays the next heartbeat; see holdHeartbeat.
	holdUntil atomic.Int64

	// shutdown is the stop it was asked for (shutdown.go), with its reason.
	shutdown       atomic.Int32
	shutdownReason atomic.Pointer[string]
	// ignored are the tasks it claimed and found itself too old for:
	// pulpcore's ignored_task_ids, which its fetch skips. Only its worker
	// goroutine uses it.
	ignored map[string]bool
}

// launch inserts a new AppStatus row for the process and starts its
// goroutines under the fleet's context.
func (p *process) launch(ctx context.Context) error {
	f := p.f
	inc := &incarnation{p: p, rowID: NewUUID(), done: make(chan struct{}), ignored: map[string]bool{}}
	if p.pod != nil {
		// The container starts, then the process in it creates its row.
		f.mu.Lock()
		p.pod.startContainer(time.Now())
		f.mu.Unlock()
		inc.rowID = NewUUID7(time.Now())
	}
	inc.lastBeat.Store(time.Now().UnixNano())
	if err := f.beforeStatement(ctx, p.name); err != nil {
		return err
	}
	labels, versions := p.versions.pairs()
	if _, err := f.pool.Exec(ctx, sqlInsertAppStatus, inc.rowID, p.appType, p.name, p.ttl.Seconds(), labels, versions); err != nil {
		return fmt.Errorf("insert app status of %s: %w", p.name, err)
	}

	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stopped || !f.started {
		return errors.New("sim: fleet is not running")
	}
	inc.ctx, inc.cancel = context.WithCancel(f.ctx)
	p.cur = inc
	p.killed = false
	p.incarnations++
	var running sync.WaitGroup
	running.Go(inc.heartbeatLoop)
	if p.appType == AppTypeWorker {
		running.Go(inc.workerLoop)
	}
	f.wg.Go(func() {
		running.Wait()
		close(inc.done)
	})
	return nil
}

// die is a kill -9 from inside: the process stops where it is.
func (inc *incarnation) die(task, step string) {
	f := inc.p.f
	f.mu.Lock()
	alreadyDead := inc.p.killed || inc.p.cur != inc
	inc.p.killed = true
	if !alreadyDead && inc.p.pod != nil {
		inc.p.pod.endContainer(time.Now())
	}
	f.mu.Unlock()
	inc.cancel()
	if alreadyDead {
		return
	}
	f.recordFault(FaultKill, inc.p.name, task, "died "+step)
	if after := f.faultRates.Load().RestartAfter; after > 0 {
		name := inc.p.name
		f.spawn(func(ctx context.Context) {
			<-inc.done
			if !ctxwait.Sleep(ctx, after) {
				return
			}
			if err := f.Restart(ctx, name); err != nil {
				f.noteError(ctx, name, "restart", err)
			}
		})
	}
}

// heartbeatAge is how long ago the last successful heartbeat was sent.
func (inc *incarnation) heartbeatAge() time.Duration {
	return time.Since(time.Unix(0, inc.lastBeat.Load()))
}

// mayBeReaped reports whether the process's heartbeat is old enough that a
// correct reaper may judge it dead, so losing its locks is not a violation.
func (inc *incarnation) mayBeReaped() bool {
	return inc.heartbeatAge() > inc.p.ttl+inc.p.f.cfg.HeartbeatGrace
}

// holdHeartbeat makes the next heartbeat wait until gap after the last one.
func (inc *incarnation) holdHeartbeat(gap time.Duration) {
	inc.holdUntil.Store(inc.lastBeat.Load() + int64(gap))
}

// heartbeatLoop beats every ttl/3 with the database clock, as pulpcore's
// workers do, unless a heartbeat-delay fault holds it back.
func (inc *incarnation) heartbeatLoop() {
	ctx, f, p := inc.ctx, inc.p.f, inc.p
	interval := p.ttl / 3
	var retryAt time.Time
	for {
		next := time.Unix(0, inc.lastBeat.Load()).Add(interval)
		if !retryAt.IsZero() {
			next, retryAt = retryAt, time.Time{}
		}
		if !ctxwait.Sleep(ctx, time.Until(next)) {
			return
		}
		// A hold may have been set while sleeping; it only ever pushes the
		// beat later, so checking after waking is enough.
		if hold := time.Unix(0, inc.holdUntil.Load()); time.Now().Before(hold) {
			if !ctxwait.Sleep(ctx, time.Until(hold)) {
				return
			}
		}
		if f.fire(FaultHeartbeatDelay) {
			grace := f.cfg.HeartbeatGrace
			gap := f.rng.Duration(p.ttl+grace/4, p.ttl+3*grace/4)
			inc.holdHeartbeat(gap)
			f.recordFault(FaultHeartbeatDelay, p.name, "", "gap "+gap.String())
			continue
		}
		if err := f.beforeStatement(ctx, p.name); err != nil {
			return
		}
		sent := time.Now()
		if _, err := f.pool.Exec(ctx, sqlHeartbeat, inc.rowID); err != nil {
			if ctx.Err() != nil {
				return
			}
			if p.appType == AppTypeWorker {
				// handle_worker_heartbeat: a failed write shuts the worker down.
				inc.requestShutdown(shutdownAbort, "heartbeat write failed")
				return
			}
			f.noteError(ctx, p.name, "heartbeat", fmt.Errorf("beat: %w", err))
			// Try again soon rather than a full interval later.
			retryAt = time.Now().Add(interval / 4)
			continue
		}
		inc.lastBeat.Store(sent.UnixNano())
		f.counters.heartbeats.Add(1)
		if p.appType == AppTypeWorker {
			if err := f.rdb.Ping(ctx).Err(); err != nil && ctx.Err() == nil {
				// handle_redis_heartbeat: so does a failed Redis PING.
				inc.requestShutdown(shutdownAbort, "Redis PING failed")
				return
			}
		}
	}
}
