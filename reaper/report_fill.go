package reaper

import (
	"sort"
	"time"
)

// fill copies the plan and what the actor did into the report.
func (r *Report) fill(plan *Plan, act *actor) {
	r.verdictCounts = map[Verdict]int{}
	perOwner := map[string]int{}
	for i, jd := range plan.Holdings {
		r.verdictCounts[jd.Verdict]++
		perOwner[jd.Owner]++
		if jd.Verdict == VerdictHealthy || jd.Verdict == VerdictJustified {
			continue
		}
		f := Finding{
			Key: jd.Key, Kind: jd.Kind, Owner: jd.Owner, TaskID: jd.TaskID, Resource: jd.Resource, Registered: jd.Registered,
			Verdict: jd.Verdict, Action: jd.Action, Result: act.holdingResults[i], Deferred: jd.Deferred,
			FirstSeen: jd.FirstSeen, Evidence: jd.Evidence,
		}
		r.Findings = append(r.Findings, f)
	}
	for i, tj := range plan.Tasks {
		r.Tasks = append(r.Tasks, TaskFinding{
			ID: tj.ID, Name: tj.Name, Verdict: tj.Verdict, Action: tj.Action, Owner: tj.Owner, AppLockID: tj.AppLockID,
			StateBefore: tj.StateBefore, StateAfter: tj.StateAfter, Requeue: tj.ClearClaim, Reason: tj.Reason,
			Result: act.taskResults[i], Deferred: act.taskDeferred[i], FirstSeen: tj.FirstSeen,
		})
	}
	owners := make([]string, 0, len(perOwner))
	for o := range perOwner {
		owners = append(owners, o)
	}
	sort.Strings(owners)
	liveness := map[string]OwnerReport{}
	for _, o := range plan.Holdings {
		if _, ok := liveness[o.Owner]; !ok {
			liveness[o.Owner] = OwnerReport{Name: o.Owner, Liveness: o.Evidence.OwnerLiveness.String(), HeartbeatAge: o.Evidence.HeartbeatAge}
		}
	}
	for _, o := range owners {
		or := liveness[o]
		or.Holdings = perOwner[o]
		r.Owners = append(r.Owners, or)
	}
	r.Scanned.Owners = len(owners)
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
