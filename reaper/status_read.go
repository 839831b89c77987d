package reaper

import (
	"context"

	"github.com/lock-reaper/lock-reaper/judge"
	"github.com/lock-reaper/lock-reaper/pulpdb"
)

// What the status page reads beside a pass's snapshot. Nothing here writes.

// Policy is the policy the reaper judges with.
func (r *Reaper) Policy() judge.Policy { return r.cfg.Policy }

// Judged is the inspection of a snapshot a pass read: every holding judged
// with the policy, as Inspect judges, without reading anything again.
func Judged(snap judge.Snapshot, p judge.Policy, kube *KubernetesReport) *Inspection {
	return &Inspection{Snapshot: snap, Plan: judge.All(snap, p), Policy: p, Kubernetes: kube}
}

// WaitingTasks reads the first limit waiting, unclaimed tasks in Pulp's own
// fetch order, and how many there are (pulpdb.ReadWaitingTasks).
func (r *Reaper) WaitingTasks(ctx context.Context, limit int) ([]pulpdb.TaskRow, int, error) {
	return pulpdb.ReadWaitingTasks(ctx, r.pool, r.cfg.DatabaseTimeout, limit)
}

// ExplainOn says what explain would say of a task, judged on an inspection
// already made: only the task's row and the older tasks that go before it
// are read, not Redis nor the rest of the database. in is not changed.
func (r *Reaper) ExplainOn(ctx context.Context, in *Inspection, taskID string) (Explanation, error) {
	ex, err := pulpdb.ReadExplainedTask(ctx, r.pool, r.cfg.DatabaseTimeout, taskID)
	if err != nil {
		return Explanation{}, err
	}
	with := *in
	with.Explained = ex
	return Explain(&with, taskID), nil
}
