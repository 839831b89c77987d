package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/lock-reaper/lock-reaper/heartbeat"
	"github.com/lock-reaper/lock-reaper/internal/ctxwait"
	"github.com/lock-reaper/lock-reaper/internal/daemon"
	"github.com/lock-reaper/lock-reaper/internal/sim"
	"github.com/lock-reaper/lock-reaper/internal/sim/simkube"
	"github.com/lock-reaper/lock-reaper/reaper"
)

// trialPoll is how often a trial's own waits look, in real time.
const trialPoll = 5 * time.Millisecond

// unjamTrial runs one death in databases of its own: a fleet in pods with a
// task running on a repository and a second task waiting for it, the daemon
// on its (scaled) default schedule, the death at a random moment of the
// schedule and of the heartbeat period; then it waits for the daemon's pass
// that releases the dead owner's task lock and for the blocked task's start.
func (o options) unjamTrial(ctx context.Context, c unjamCase, machineOnce *sync.Once, m *Machine) (UnjamTrial, error) {
	var tr UnjamTrial
	e, err := newEnv(ctx, o.redisURL, o.databaseURL)
	if err != nil {
		return tr, err
	}
	defer e.close()
	rdb, pool, err := e.clients(ctx)
	if err != nil {
		return tr, err
	}
	defer rdb.Close()
	defer pool.Close()
	machineOnce.Do(func() { m.fill(ctx, rdb, pool) })

	fleet, err := sim.New(rdb, pool, sim.Config{
		Workers: unjamWorkers, APIs: 1, Hostname: "unjam",
		WorkerTTL: o.scaled(unjamWorkerTTL), APITTL: o.scaled(unjamAPITTL), HeartbeatGrace: o.scaled(unjamGrace),
		MinTaskDuration: 24 * time.Hour, MaxTaskDuration: 24 * time.Hour, PollInterval: unjamPoll,
		Pods: sim.PodConfig{Enabled: true, TimeResolution: o.scaled(unjamPodResolution)}, Seed: rand.Uint64(),
	})
	if err != nil {
		return tr, err
	}
	if err := fleet.Start(ctx); err != nil {
		return tr, err
	}
	defer fleet.Stop()
	running, blocked, owner, err := blockedBehindRunning(ctx, fleet, rdb, pool)
	if err != nil {
		return tr, err
	}

	var watched *watchedPods
	if c.Watch {
		if watched, err = o.watchPods(ctx, fleet, c.Fault); err != nil {
			return tr, err
		}
		defer watched.stop()
	}
	rec, err := o.newPassRecorder(rdb, pool, fleet, c.Kubernetes, watched)
	if err != nil {
		return tr, err
	}
	// run's daemon: the schedule, and the worker rows read every
	// heartbeat_poll, with a pass when one goes stale while the pods are
	// only listed (internal/cli/run.go), scaled.
	dc := daemon.Config{
		Schedule: fmt.Sprintf("@every %v", o.scaled(unjamSchedule)), Jitter: o.scaled(unjamJitter),
		FullScanInterval: o.scaled(unjamFullScan), Listen: "127.0.0.1:0",
		Heartbeats: rec.r.Heartbeats, HeartbeatGrace: o.scaled(unjamGrace), HeartbeatPoll: o.scaled(daemon.HeartbeatPollDefault),
		PodsListed: daemon.PodsListedBy(rec.pods),
	}
	if watched != nil && watched.watcher != nil {
		dc.Wake, dc.WakeDebounce = watched.watcher.Ended(), o.scaled(daemon.WakeDebounceDefault)
	}
	d, err := daemon.New(rec, dc)
	if err != nil {
		return tr, err
	}
	if err := d.Start(ctx); err != nil {
		return tr, err
	}
	defer d.Stop()
	// The first pass runs at once; the death comes at a random moment of a
	// later period.
	if !o.awaitDeath(ctx, c, watched) {
		return tr, ctx.Err()
	}

	deadRow := rowOf(fleet, owner)
	t0, err := o.die(ctx, c, fleet, owner, watched)
	if err != nil {
		return tr, err
	}
	deadline := time.Now().Add(o.scaled(unjamWorkerTTL+unjamGrace+o.hungWorkerGrace+2*(unjamSchedule+unjamJitter)) + 10*time.Second)
	released, pass, n, err := rec.waitRelease(ctx, rdb, sim.TaskKey(running), owner, t0, deadline)
	if err != nil {
		return tr, err
	}
	var lastBeat time.Time
	if err := pool.QueryRow(ctx, `SELECT last_heartbeat FROM core_appstatus WHERE pulp_id = $1`, deadRow).Scan(&lastBeat); err != nil {
		return tr, fmt.Errorf("read the dead row's heartbeat: %w", err)
	}
	if c.Death == deathAlive {
		// A live worker's clock starts at its last heartbeat; no later one
		// was written, since it is held for a day.
		t0 = lastBeat
	}
	started, err := waitStarted(ctx, pool, blocked, deadline)
	if err != nil {
		return tr, err
	}
	contract, name := o.contractMoment(c, t0, lastBeat)
	deathAt := lastBeat.Add(o.scaled(unjamWorkerTTL + unjamGrace))
	tr = UnjamTrial{ReleasedS: round1(o.back(released.Sub(t0))), StartedS: round1(o.back(started.Sub(t0))), Passes: n,
		Contract: name, AfterContractS: round1(o.back(released.Sub(contract))), AfterDeadlineS: round1(o.back(released.Sub(deathAt)))}
	if watched != nil {
		if report, ok := watched.reportAfter(podOf(owner), t0); ok {
			tr.Reported = true
			tr.WokenS = round1(o.back(rec.startAfter(report).Sub(report)))
			tr.ReleasedAfterReportS = round1(o.back(released.Sub(report)))
		}
	}
	tr.Verdict, tr.Rule = o.releasedBy(pass, sim.TaskKey(running), owner, lastBeat)
	if c.Death == deathAlive {
		tr.StoppedOnSignal = waitFor(ctx, time.Now().Add(5*time.Second), func() bool { return fleet.Stats().StoppedOnSignal > 0 })
	}
	if v := fleet.Violations(); len(v) > 0 {
		return tr, fmt.Errorf("the fleet saw %d safety violations, the first: %s", len(v), v[0])
	}
	return tr, nil
}

// blockedBehindRunning submits two tasks exclusive on one repository and
// waits for the first to run; the second waits for its lock.
func blockedBehindRunning(ctx context.Context, fleet *sim.Fleet, rdb *redis.Client, pool *pgxpool.Pool) (running, blocked, owner string, err error) {
	repo := sim.RepositoryPRN(sim.NewUUID())
	ids, err := fleet.SubmitSpecs(ctx, sim.TaskSpec{Exclusive: []string{repo}}, sim.TaskSpec{Exclusive: []string{repo}})
	if err != nil {
		return "", "", "", err
	}
	running, blocked = ids[0], ids[1]
	if _, err := waitStarted(ctx, pool, running, time.Now().Add(10*time.Second)); err != nil {
		return "", "", "", err
	}
	owner, err = rdb.Get(ctx, sim.TaskKey(running)).Result()
	if err != nil {
		return "", "", "", fmt.Errorf("read the running task's owner: %w", err)
	}
	return running, blocked, owner, nil
}

func rowOf(fleet *sim.Fleet, name string) string {
	for _, p := range fleet.Processes() {
		if p.Name == name {
			return p.AppStatusID
		}
	}
	return ""
}

// die kills the owner as the case says and returns the moment of death.
func (o options) die(ctx context.Context, c unjamCase, fleet *sim.Fleet, owner string, w *watchedPods) (time.Time, error) {
	t0 := time.Now()
	switch c.Death {
	case deathNodeCrash:
		// The kubelet goes with its node: no status update tells of the
		// process's end.
		w.mirror.Freeze(podOf(owner))
		if err := fleet.Kill(owner); err != nil {
			return t0, err
		}
		w.nodeLifecycle(podOf(owner), t0, o.scaled(nodeMonitorGrace), o.scaled(taintToleration))
		return t0, nil
	case deathPodDeleted:
		_, err := fleet.DeletePod(ctx, owner)
		return t0, err
	case deathRestarted:
		if err := fleet.Kill(owner); err != nil {
			return t0, err
		}
		if !ctxwait.Sleep(ctx, time.Until(t0.Add(o.scaled(o.restartDelay)))) {
			return t0, ctx.Err()
		}
		return t0, fleet.Restart(ctx, owner)
	default:
		return t0, fleet.DelayHeartbeat(owner, 24*time.Hour)
	}
}

// waitStarted waits for a task to be running and returns its started_at.
func waitStarted(ctx context.Context, pool *pgxpool.Pool, id string, deadline time.Time) (time.Time, error) {
	var started *time.Time
	var state string
	var err error
	ok := waitFor(ctx, deadline, func() bool {
		err = pool.QueryRow(ctx, `SELECT state, started_at FROM core_task WHERE pulp_id = $1`, id).Scan(&state, &started)
		return err != nil || started != nil
	})
	switch {
	case err != nil:
		return time.Time{}, fmt.Errorf("read task %s: %w", id, err)
	case !ok:
		return time.Time{}, fmt.Errorf("task %s never started (state %s)", id, state)
	}
	return *started, nil
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(ctx context.Context, deadline time.Time, cond func() bool) bool {
	for !cond() {
		if time.Now().After(deadline) || !ctxwait.Sleep(ctx, trialPoll) {
			return false
		}
	}
	return true
}

// releasedBy names the releasing finding's verdict and the rule that made
// the release necessary in that pass. When the dead row was already past
// ttl + grace the ordinary rules alone would have released it too:
// "heartbeats". Else Kubernetes evidence did; a finding's pod evidence is its
// owner name's, which after a same-name restart is the live row's
// (pod-seen), so the release is then the container-restarted rule's.
func (o options) releasedBy(p passRecord, key, owner string, lastBeat time.Time) (verdict, rule string) {
	fd := p.finding(key, owner)
	verdict, rule = fd.Verdict.String(), "heartbeats"
	k := fd.Evidence().Kubernetes
	switch {
	case k != nil && k.Rule == heartbeat.PodHungTooLong:
		rule = string(k.Rule)
	case p.rep.DBNow.Sub(lastBeat) > o.scaled(unjamWorkerTTL+unjamGrace):
	case k != nil && k.Rule != heartbeat.PodSeen:
		rule = string(k.Rule)
	case k != nil:
		rule = string(heartbeat.PodRestarted)
	}
	return verdict, rule
}

// passRecorder is the daemon's runner: a real reaper, whose reports it keeps
// with the moment each pass ended.
type passRecorder struct {
	r *reaper.Reaper
	// pods is the reaper's pod source, nil without Kubernetes.
	pods reaper.PodSource

	mu     sync.Mutex
	passes []passRecord
}

type passRecord struct {
	start, end time.Time
	rep        *reaper.Report
}

// startAfter is the start of the first pass at or after t; t itself when
// none started yet.
func (p *passRecorder) startAfter(t time.Time) time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, pr := range p.passes {
		if !pr.start.Before(t) {
			return pr.start
		}
	}
	return t
}

func (p passRecord) finding(key, owner string) *reaper.Finding {
	if p.rep == nil {
		return nil
	}
	for i := range p.rep.Findings {
		if f := &p.rep.Findings[i]; f.Key == key && f.Owner == owner {
			return f
		}
	}
	return nil
}

// newPassRecorder makes the reaper with the defaults, scaled, and with the
// fleet's pods as its pod source when kubernetes is on.
func (o options) newPassRecorder(rdb *redis.Client, pool *pgxpool.Pool, fleet *sim.Fleet, kubernetes bool, watched *watchedPods) (*passRecorder, error) {
	cfg := reaper.DefaultConfig()
	cfg.HeartbeatRecheck = benchRecheck
	cfg.HeartbeatGrace = o.scaled(unjamGrace)
	cfg.FinishedGrace, cfg.ConfirmAfter = o.scaled(cfg.FinishedGrace), o.scaled(cfg.ConfirmAfter)
	cfg.Kubernetes = heartbeat.PodPolicy{HungWorkerGrace: o.scaled(o.hungWorkerGrace), ClockSkew: o.scaled(unjamClockSkew)}
	switch {
	case watched != nil:
		cfg.PodSource = watched.source
	case kubernetes:
		src, err := simkube.NewSource(fleet)
		if err != nil {
			return nil, err
		}
		cfg.PodSource = src
	}
	r, err := reaper.New(cfg, rdb, pool, nil)
	if err != nil {
		return nil, err
	}
	return &passRecorder{r: r, pods: cfg.PodSource}, nil
}

func (p *passRecorder) RunOnce(ctx context.Context, opts reaper.Options) (*reaper.Report, error) {
	start := time.Now()
	rep, err := p.r.RunOnce(ctx, opts)
	p.mu.Lock()
	p.passes = append(p.passes, passRecord{start: start, end: time.Now(), rep: rep})
	p.mu.Unlock()
	return rep, err
}

// waitRelease watches the task lock until it is no longer owner's and
// returns that moment (within trialPoll), the pass that released it and the
// passes that ended between t0 and it. A pass's end would overstate the
// release by the pass's length, which the time scale multiplies.
func (p *passRecorder) waitRelease(ctx context.Context, rdb *redis.Client, key, owner string, t0, deadline time.Time) (time.Time, passRecord, int, error) {
	var released time.Time
	var err error
	gone := waitFor(ctx, deadline, func() bool {
		var v string
		v, err = rdb.Get(ctx, key).Result()
		if errors.Is(err, redis.Nil) || (err == nil && v != owner) {
			released, err = time.Now(), nil
			return true
		}
		return err != nil
	})
	switch {
	case err != nil:
		return released, passRecord{}, 0, fmt.Errorf("watch %s: %w", key, err)
	case !gone && ctx.Err() != nil:
		return released, passRecord{}, 0, ctx.Err()
	case !gone:
		return released, passRecord{}, 0, errors.New("no pass released the dead owner's task lock in time")
	}
	var found passRecord
	n := 0
	ok := waitFor(ctx, time.Now().Add(time.Minute), func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		n = 0
		for _, pr := range p.passes {
			if pr.end.Before(t0) {
				continue
			}
			n++
			if fd := pr.finding(key, owner); fd != nil && fd.Result == reaper.ResultReleased {
				found = pr
				return true
			}
		}
		return false
	})
	if !ok {
		return released, found, n, fmt.Errorf("%s was released, but by no pass's report", key)
	}
	return released, found, n, nil
}
