package reaper

import (
	"context"
	"time"

	"github.com/lock-reaper/lock-reaper/heartbeat"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
	"github.com/lock-reaper/lock-reaper/reaper/pulpdb"
)

// InspectOptions choose what an inspection reads.
type InspectOptions struct {
	// RegistryOnly skips the keyspace SCAN, as Options.RegistryOnly does.
	RegistryOnly bool
	// TaskID, when set, also reads that task and the older waiting tasks
	// whose reservations conflict with it (see Inspection.Explained).
	TaskID string
	// Progress, when set, is told how many lock keys have been read.
	Progress func(keys int)
}

// Inspection is what a pass would see and decide, without acting: the
// snapshot, the plan Judge makes of it and the policy it was judged with.
// Operator tools (explain, locks, the preview of a break-glass release) read
// it; nothing in it has been written anywhere.
type Inspection struct {
	Snapshot judge.Snapshot
	Plan     judge.Plan
	Policy   judge.Policy
	// Explained is set when InspectOptions.TaskID was.
	Explained *pulpdb.ExplainedTask
	// Kubernetes is what the inspection read from Kubernetes, when that is on.
	Kubernetes *KubernetesReport
	// ActiveOwners counts the owners pulp:active_owners lists: a Redis
	// worker's name stays there from its first lock until its cleanup.
	ActiveOwners int
	// Ignored lists the keys under a lock prefix that are no Pulp lock.
	Ignored []Ignored
}

// Inspect reads one snapshot exactly as a pass does (Redis, then the
// database) and judges it, without taking the pass lock and without writing
// anything, not even suspects.
func (r *Reaper) Inspect(ctx context.Context, opts InspectOptions) (*Inspection, error) {
	pass := Options{Mode: ModeAudit, RegistryOnly: opts.RegistryOnly, Progress: opts.Progress}
	rd, err := r.read(ctx, pass, nil)
	if err != nil {
		return nil, err
	}
	in := &Inspection{Snapshot: rd.snap, Plan: judge.All(rd.snap, r.cfg.Policy), Policy: r.cfg.Policy, Kubernetes: rd.kubernetes,
		ActiveOwners: rd.activeOwners, Ignored: rd.ignored}
	if opts.TaskID != "" {
		if in.Explained, err = pulpdb.ReadExplainedTask(ctx, r.pool, r.cfg.DatabaseTimeout, opts.TaskID); err != nil {
			return nil, err
		}
	}
	return in, nil
}

// Owner returns what the inspection knows of an owner name: the liveness of
// its AppStatus rows, or for an immediate-<uuid> owner that of its task.
func (in *Inspection) Owner(name string) heartbeat.Owner {
	return judge.LockOwner(in.Snapshot.Tasks, in.Fleet(), name)
}

// Fleet returns the liveness of every AppStatus row and name.
func (in *Inspection) Fleet() *heartbeat.Fleet {
	return judge.FleetOf(in.Snapshot, in.Policy)
}

// What the status page reads beside a pass's snapshot. Nothing here writes.

// Policy is the policy the reaper judges with.
func (r *Reaper) Policy() judge.Policy { return r.cfg.Policy }

// InspectionOf is the inspection of a snapshot a pass read: every holding judged
// with the policy, as Inspect judges, without reading anything again.
func InspectionOf(snap judge.Snapshot, p judge.Policy, kube *KubernetesReport) *Inspection {
	return &Inspection{Snapshot: snap, Plan: judge.All(snap, p), Policy: p, Kubernetes: kube}
}

// WaitingTasks reads the first limit waiting, unclaimed tasks in Pulp's own
// fetch order, and how many there are (pulpdb.ReadWaitingTasks).
func (r *Reaper) WaitingTasks(ctx context.Context, limit int) ([]pulpdb.TaskRow, int, error) {
	return pulpdb.ReadWaitingTasks(ctx, r.pool, r.cfg.DatabaseTimeout, limit)
}

// ExplainedTask reads what explain needs of a task beyond an inspection:
// the task's row and the older tasks that go before it, not Redis nor the
// rest of the database (pulpdb.ReadExplainedTask).
func (r *Reaper) ExplainedTask(ctx context.Context, taskID string) (*pulpdb.ExplainedTask, error) {
	return pulpdb.ReadExplainedTask(ctx, r.pool, r.cfg.DatabaseTimeout, taskID)
}

// TaskStarts reads when each of the tasks ids started; granted is false,
// with nothing read, when the role may not read core_task.started_at
// (pulpdb.ReadTaskStarts).
func (r *Reaper) TaskStarts(ctx context.Context, ids []string) (map[string]time.Time, bool, error) {
	return pulpdb.ReadTaskStarts(ctx, r.pool, r.cfg.DatabaseTimeout, ids)
}

// Heartbeats reads the worker rows and the database's clock, for the
// daemon's watch on rows crossing their ttl + grace; nothing else.
func (r *Reaper) Heartbeats(ctx context.Context) (pulpdb.Heartbeats, error) {
	hb, err := pulpdb.ReadHeartbeats(ctx, r.pool, r.cfg.DatabaseTimeout)
	if err != nil {
		return hb, inStep("reading Pulp's worker heartbeats from", SystemDatabase, err)
	}
	// A pass may settle a death on this read instead of waiting for one.
	r.recent.add(hb)
	return hb, nil
}

// OwnerRelease is the plan of a break-glass release of owner on this
// inspection: what `lock-reaper release --owner` would do.
func (in *Inspection) OwnerRelease(owner string) judge.Plan {
	return judge.OwnerRelease(in.Snapshot, in.Policy, owner)
}
