package reaper

import (
	"context"
	"time"

	"github.com/lock-reaper/lock-reaper/reaper/judge"
	"github.com/lock-reaper/lock-reaper/reaper/pulpdb"
)

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
