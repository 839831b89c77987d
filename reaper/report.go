package reaper

import (
	"time"

	"github.com/lock-reaper/lock-reaper/reaper/judge"
)

// Report is what one pass found and did. It is the single source of truth:
// the logs, the text table, `--output json` and the metrics all read it.
type Report struct {
	Mode       string    `json:"mode"`
	StartedAt  time.Time `json:"started_at"`
	DurationMS int64     `json:"duration_ms"`
	// DBNow is the database clock every age was measured against.
	DBNow time.Time `json:"db_now"`
	// Skipped says why the pass did nothing (another reaper held the lock).
	Skipped string  `json:"skipped,omitempty"`
	Scanned Scanned `json:"scanned"`
	// LockOwners is every owner of a lock holding, with its liveness.
	LockOwners []OwnerReport `json:"owners"`
	Findings   []Finding     `json:"findings"`
	Tasks      []TaskFinding `json:"tasks"`
	Ignored    []Ignored     `json:"ignored"`
	Guards     []Guard       `json:"guards"`
	// Kubernetes is what the pass read from Kubernetes, when that is on.
	Kubernetes *KubernetesReport `json:"kubernetes,omitempty"`
	// HeartbeatRecheck is what reads of the heartbeats a period apart said
	// of the rows that looked dead, when some did.
	HeartbeatRecheck *HeartbeatRecheck `json:"heartbeat_recheck,omitempty"`
	Summary          Summary           `json:"summary"`
	// SignalCheck is what the pass did about earlier cancel signals when
	// Redis's primary was not the one they were last checked on.
	SignalCheck *SignalCheck `json:"cancel_signal_check,omitempty"`
	// Notes say what the pass saw about the deployment itself, such as
	// Pulp running a worker whose locks are not in Redis (WorkerTypeNote).
	Notes []string `json:"notes,omitempty"`
	// Error says why the pass could not complete; what it did before is above.
	Error string `json:"error,omitempty"`

	// NextChange is the earliest moment (database clock) at which a verdict
	// of this pass can change with nothing else changing (judge.NextChange);
	// zero when none is pending or the pass judged nothing. The daemon runs
	// its next pass then.
	NextChange time.Time `json:"-"`
	// ReleaseDelays is, per dead owner whose locks this pass released, how
	// long after the rules allowed it (releaseDelays).
	ReleaseDelays []time.Duration `json:"-"`

	verdictCounts map[judge.Verdict]int
	// activeOwners counts the owners pulp:active_owners listed, for Inspection.
	activeOwners int
	// redisPrimary says the pass found Redis the primary, so the history
	// may be written without asking again.
	redisPrimary bool
	// historyFailed says the pass is not in the history (HistoryWriteFailed).
	historyFailed bool
	// bookkeepingFailed names the records of its own the pass could not
	// write, Redis being full (BookkeepingWriteFailures).
	bookkeepingFailed []string
}

// Scanned counts what the pass read.
type Scanned struct {
	Keys             int  `json:"keys"`
	TaskLocks        int  `json:"task_locks"`
	ResourceHoldings int  `json:"resource_holdings"`
	Owners           int  `json:"owners"`
	Tasks            int  `json:"tasks"`
	Ignored          int  `json:"ignored"`
	FullScan         bool `json:"full_scan"`
}

// Finding is one holding that is not healthy, and what became of it: the
// judge's judgement (the plan's own, not a copy: an incident's findings are
// hundreds of thousands) and the pass's result. In JSON its holding's
// fields are flat, with task_id and resource (report_json.go).
type Finding struct {
	*judge.Judgement
	Result Result
}

// TaskFinding is one lost, orphaned or stuck task, and what became of it:
// the judge's task judgement and the pass's result. In JSON a cleared claim
// is "requeue".
type TaskFinding struct {
	*judge.TaskJudgement
	Result Result
	// Resources lists, for an unprotected task, what it reserves and who
	// else holds each (unguardedOf).
	Resources []UnguardedResource
}

// Summary counts holdings and tasks by verdict and by result.
type Summary struct {
	// HoldingsByVerdict counts every holding, healthy ones included.
	HoldingsByVerdict map[judge.Verdict]int `json:"by_verdict"`
	// FindingsByResult counts the findings (holdings not healthy).
	FindingsByResult map[Result]int        `json:"by_result"`
	TasksByVerdict   map[judge.Verdict]int `json:"tasks_by_verdict"`
	TasksByResult    map[Result]int        `json:"tasks_by_result"`
	Released         int                   `json:"released"`
	TasksUpdated     int                   `json:"tasks_updated"`
	Suspects         int                   `json:"suspects"`
	Deferred         int                   `json:"deferred"`
}

// WouldAct says a real pass would release a lock or update a task: the
// findings of an audit that need action (those that need confirmation count).
func (r *Report) WouldAct() bool {
	for _, f := range r.Findings {
		if f.Action == judge.ActionRelease || f.Action == judge.ActionSuspect {
			return true
		}
	}
	for _, t := range r.Tasks {
		if t.Action == judge.ActionUpdate || t.Action == judge.ActionSuspect {
			return true
		}
	}
	return false
}

func (r *Report) summarize() {
	s := Summary{HoldingsByVerdict: map[judge.Verdict]int{}, FindingsByResult: map[Result]int{}, TasksByVerdict: map[judge.Verdict]int{}, TasksByResult: map[Result]int{}}
	for _, f := range r.Findings {
		s.FindingsByResult[f.Result]++
		switch f.Result {
		case ResultReleased:
			s.Released++
		case ResultDeferred:
			s.Deferred++
		case ResultSuspected:
			s.Suspects++
		}
	}
	for _, t := range r.Tasks {
		s.TasksByVerdict[t.Verdict]++
		s.TasksByResult[t.Result]++
		switch t.Result {
		case ResultUpdated:
			s.TasksUpdated++
		case ResultDeferred:
			s.Deferred++
		case ResultSuspected:
			s.Suspects++
		}
	}
	r.Summary = s
}

// fill copies the plan and what the actor did into the report, and lets go
// of the plan's lists as it goes: when every holding is stale they are
// hundreds of thousands of judgements, and the report's copy of them would
// otherwise double the peak of the pass. Nothing reads the plan after this.
func (r *Report) fill(plan *judge.Plan, act *actor) {
	r.verdictCounts = plan.ByVerdict
	r.Notes = append(r.Notes, act.notes...)
	r.bookkeepingFailed = act.bookkeepingFailed
	r.Tasks = make([]TaskFinding, len(plan.Tasks))
	for i := range plan.Tasks {
		plan.Tasks[i].Deferred = act.taskDeferred[i]
		r.Tasks[i] = TaskFinding{TaskJudgement: &plan.Tasks[i], Result: act.taskResults[i]}
	}
	plan.Tasks, act.taskResults, act.taskDeferred = nil, nil, nil
	// The findings point into the plan's judgements, kept where they are.
	n := 0
	for i := range plan.Holdings {
		if plan.Holdings[i].Verdict.Finding() {
			n++
		}
	}
	r.Findings = make([]Finding, 0, n)
	for i := range plan.Holdings {
		if plan.Holdings[i].Verdict.Finding() {
			r.Findings = append(r.Findings, Finding{Judgement: &plan.Holdings[i], Result: act.holdingResults[i]})
		}
	}
	plan.Holdings, act.holdingResults = nil, nil
	r.LockOwners = OwnerReportsOf(plan.LockOwners)
	r.Scanned.Owners = len(plan.LockOwners)
}

// summarizeAll counts by verdict and result; empty lists print as [] in JSON.
func (r *Report) summarizeAll() {
	r.summarize()
	r.Summary.HoldingsByVerdict = r.verdictCounts
	if r.Summary.HoldingsByVerdict == nil {
		r.Summary.HoldingsByVerdict = map[judge.Verdict]int{}
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
	if r.LockOwners == nil {
		r.LockOwners = []OwnerReport{}
	}
}

// timeDuration is a report duration as a time.Duration, for the logs.
func timeDuration(d *judge.Duration) time.Duration { return time.Duration(*d) }
