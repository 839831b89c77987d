package reaper

import (
	"time"
)

// fill copies the plan and what the actor did into the report, and lets go
// of the plan's lists as it goes: when every holding is stale they are
// hundreds of thousands of judgements, and the report's copy of them would
// otherwise double the peak of the pass. Nothing reads the plan after this.
func (r *Report) fill(plan *Plan, act *actor) {
	r.verdictCounts = plan.ByVerdict
	r.Tasks = make([]TaskFinding, 0, len(plan.Tasks))
	for i, tj := range plan.Tasks {
		r.Tasks = append(r.Tasks, TaskFinding{
			ID: tj.ID, Name: tj.Name, Verdict: tj.Verdict, Action: tj.Action, Owner: tj.Owner, AppLockID: tj.AppLockID,
			StateBefore: tj.StateBefore, StateAfter: tj.StateAfter, Requeue: tj.ClearClaim, Reason: tj.Reason,
			Result: act.taskResults[i], Deferred: act.taskDeferred[i], FirstSeen: tj.FirstSeen, Resources: tj.Resources,
		})
	}
	plan.Tasks, act.taskResults, act.taskDeferred = nil, nil, nil
	n := 0
	for _, jd := range plan.Holdings {
		if jd.Verdict.Finding() {
			n++
		}
	}
	r.Findings = make([]Finding, 0, n)
	for i, jd := range plan.Holdings {
		if !jd.Verdict.Finding() {
			continue
		}
		r.Findings = append(r.Findings, Finding{
			Key: jd.Key, Kind: jd.Kind, Owner: jd.Owner, TaskID: jd.TaskID(), Resource: jd.Resource(), Registered: jd.Registered,
			Verdict: jd.Verdict, Action: jd.Action, Result: act.holdingResults[i], Deferred: jd.Deferred,
			FirstSeen: jd.FirstSeen, Evidence: jd.Evidence,
		})
	}
	plan.Holdings, act.holdingResults = nil, nil
	r.Owners = plan.LockOwners
	r.Scanned.Owners = len(plan.LockOwners)
}

// summarizeAll counts by verdict and result; empty lists print as [] in JSON.
func (r *Report) summarizeAll() {
	r.summarize()
	r.Summary.HoldingsByVerdict = r.verdictCounts
	if r.Summary.HoldingsByVerdict == nil {
		r.Summary.HoldingsByVerdict = map[Verdict]int{}
	}
	if r.Findings == nil {
		r.Findings = []Finding{}
	}
	if r.Tasks == nil {
		r.Tasks = []TaskFinding{}
	}
	if r.Ignored == nil {
		r.Ignored = []Ignored{}
	}
	if r.Guards == nil {
		r.Guards = []Guard{}
	}
	if r.Owners == nil {
		r.Owners = []OwnerReport{}
	}
}

func timeDuration(d *Duration) time.Duration { return time.Duration(*d) }
