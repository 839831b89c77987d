package sim

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// Violation is a holding that vanished from a process while it was actively
// working on the task it belonged to, with nothing to excuse it: the one
// mistake a reaper must never make. Key "core_task:<id>" means the task row
// itself was changed under a live process.
type Violation struct {
	// Worker is the owner name of the process that lost the holding.
	Worker string
	Key    string
	Task   string
	// Step is the protocol step the process was about to take.
	Step   string
	At     time.Time
	Detail string
}

func (v Violation) String() string {
	return fmt.Sprintf("%s lost %s of task %s before %s at %s (%s)",
		v.Worker, v.Key, v.Task, v.Step, v.At.Format(time.RFC3339Nano), v.Detail)
}

// job is a task a process is working on, with what it holds for it.
type job struct {
	id        string
	owner     string
	record    []string
	exclusive []string
	shared    []string
	// acquiredAt is taken just before the acquire, to tell the fleet's own
	// releases that may have hit these holdings from earlier ones.
	acquiredAt time.Time
	// compromised stops further checks once a loss was judged: one loss is
	// one finding, and the process carries on as pulpcore would.
	compromised bool
	killAt      string // step at which a kill fault strikes, "" for none
}

// newJob takes the resources in the form the acquire script locks them
// (unique, a resource reserved both ways only exclusive), so that the checks
// look for exactly what was locked.
func newJob(id, owner string, record []string) *job {
	ex, sh := SplitReserved(record)
	l := lockLayout(id, ex, sh)
	return &job{id: id, owner: owner, record: record, exclusive: l.names[:l.nExclusive], shared: l.names[l.nExclusive:]}
}

// check verifies, before step, that the process still holds every lock of j;
// with cancel it also reads the task's cancel request in the same round trip.
func (inc *incarnation) check(ctx context.Context, q querier, j *job, step string, cancel bool) (canceled bool, err error) {
	f := inc.p.f
	pipe := f.rdb.Pipeline()
	owned := map[string]*redis.StringCmd{TaskKey(j.id): pipe.Get(ctx, TaskKey(j.id))}
	for _, r := range j.exclusive {
		owned[ResourceKey(r)] = pipe.Get(ctx, ResourceKey(r))
	}
	member := map[string]*redis.BoolCmd{}
	for _, r := range j.shared {
		member[ResourceKey(r)] = pipe.SIsMember(ctx, ResourceKey(r), j.owner)
	}
	var cancelCmd *redis.IntCmd
	if cancel {
		cancelCmd = pipe.Exists(ctx, CancelKey(j.id))
	}
	// Per-command errors (missing key, wrong type) are read below; only a
	// failed round trip is an error here.
	if _, err := pipe.Exec(ctx); err != nil && ctx.Err() != nil {
		return false, ctx.Err()
	}
	if cancelCmd != nil {
		n, err := cancelCmd.Result()
		if err != nil {
			return false, fmt.Errorf("read cancel request of task %s: %w", j.id, err)
		}
		canceled = n > 0
	}
	if j.compromised {
		return canceled, nil
	}
	f.counters.checks.Add(1)
	var missing []string
	for key, cmd := range owned {
		v, err := cmd.Result()
		switch {
		case err == nil && v == j.owner:
		case err == nil, errors.Is(err, redis.Nil), redis.HasErrorPrefix(err, "WRONGTYPE"):
			missing = append(missing, key)
		default:
			return canceled, fmt.Errorf("check lock %s: %w", key, err)
		}
	}
	for key, cmd := range member {
		ok, err := cmd.Result()
		switch {
		case err == nil && ok:
		case err == nil, redis.HasErrorPrefix(err, "WRONGTYPE"):
			missing = append(missing, key)
		default:
			return canceled, fmt.Errorf("check lock %s: %w", key, err)
		}
	}
	if len(missing) > 0 {
		inc.judgeLoss(ctx, q, j, step, missing)
	}
	return canceled, nil
}

// judgeLoss decides whether holdings that vanished are violations. They are
// not when the process's heartbeat is old enough for a correct reaper to call
// it dead, when the fleet itself released them (an API cancel, a restart's
// cleanup), or when another process has taken the task over (the API claims a
// waiting task to cancel it).
func (inc *incarnation) judgeLoss(ctx context.Context, q querier, j *job, step string, missing []string) {
	f := inc.p.f
	j.compromised = true
	if inc.mayBeReaped() || f.locksLostSince(j.acquiredAt) {
		f.counters.excused.Add(int64(len(missing)))
		return
	}
	var blamed []string
	for _, k := range missing {
		if !f.selfReleasedSince(j.owner, k, j.acquiredAt) {
			blamed = append(blamed, k)
		}
	}
	f.counters.excused.Add(int64(len(missing) - len(blamed)))
	if len(blamed) == 0 {
		return
	}
	state, appLock, _, found, err := f.taskRow(ctx, q, j.owner, j.id)
	if err != nil {
		f.noteError(ctx, j.owner, "read task after lock loss", err)
		return
	}
	if found && appLock != "" && appLock != inc.rowID {
		f.counters.excused.Add(int64(len(blamed)))
		return
	}
	detail := fmt.Sprintf("task state %q, app_lock %q, heartbeat age %v", state, appLock, inc.heartbeatAge().Round(time.Millisecond))
	for _, k := range blamed {
		f.addViolation(Violation{Worker: j.owner, Key: k, Task: j.id, Step: step, At: time.Now(), Detail: detail})
	}
}

// rowChanged judges a conditional task update of a live process that found
// the row no longer as the process left it.
func (inc *incarnation) rowChanged(ctx context.Context, q querier, j *job, step string) {
	f := inc.p.f
	if j.compromised {
		return
	}
	j.compromised = true
	if inc.mayBeReaped() || f.locksLostSince(j.acquiredAt) {
		f.counters.excused.Add(1)
		return
	}
	state, appLock, _, _, err := f.taskRow(ctx, q, j.owner, j.id)
	if err != nil {
		f.noteError(ctx, j.owner, "read changed task", err)
		return
	}
	if appLock != "" && appLock != inc.rowID {
		f.counters.excused.Add(1)
		return
	}
	f.addViolation(Violation{
		Worker: j.owner, Key: "core_task:" + j.id, Task: j.id, Step: step, At: time.Now(),
		Detail: fmt.Sprintf("task row changed under a live process: state %q, app_lock %q", state, appLock),
	})
}

// LocksLost tells the fleet that Redis lost its keys at about at (a restart
// without persistence): a holding acquired before then that vanished is no
// reaper's doing.
func (f *Fleet) LocksLost(at time.Time) { f.locksLostAt.Store(at.UnixNano()) }

func (f *Fleet) locksLostSince(acquired time.Time) bool {
	at := f.locksLostAt.Load()
	return at != 0 && at >= acquired.UnixNano()
}

func (f *Fleet) addViolation(v Violation) {
	f.mu.Lock()
	f.violations = append(f.violations, v)
	f.mu.Unlock()
	f.log.Error("safety violation", "process", v.Worker, "key", v.Key, "task", v.Task, "step", v.Step, "detail", v.Detail)
}

// Violations returns every safety violation the fleet's processes saw: a
// holding of a task they were actively working on that vanished although
// nothing excused it.
func (f *Fleet) Violations() []Violation {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Violation(nil), f.violations...)
}
