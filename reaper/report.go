package reaper

import (
	"time"

	"github.com/lock-reaper/lock-reaper/heartbeat"
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
	Skipped  string        `json:"skipped,omitempty"`
	Scanned  Scanned       `json:"scanned"`
	Owners   []OwnerReport `json:"owners"`
	Findings []Finding     `json:"findings"`
	Tasks    []TaskFinding `json:"tasks"`
	Ignored  []Ignored     `json:"ignored"`
	Guards   []Guard       `json:"guards"`
	// Kubernetes is what the pass read from Kubernetes, when that is on.
	Kubernetes *KubernetesReport `json:"kubernetes,omitempty"`
	Summary    Summary           `json:"summary"`
	// Error says why the pass could not complete; what it did before is above.
	Error string `json:"error,omitempty"`

	verdictCounts map[Verdict]int
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

// OwnerReport is one lock owner seen in Redis, with its liveness.
type OwnerReport struct {
	Name         string    `json:"name"`
	Liveness     string    `json:"liveness"`
	HeartbeatAge *Duration `json:"heartbeat_age,omitempty"`
	Holdings     int       `json:"holdings"`
	// Kubernetes is the owner's pod evidence: pod, phase, container start,
	// restarts, and the rule that decided.
	Kubernetes *heartbeat.PodEvidence `json:"kubernetes,omitempty"`
}

// Finding is one holding that is not healthy, and what became of it.
type Finding struct {
	Key        string     `json:"key"`
	Kind       Kind       `json:"kind"`
	Owner      string     `json:"owner"`
	TaskID     string     `json:"task_id,omitempty"`
	Resource   string     `json:"resource,omitempty"`
	Registered bool       `json:"registered"`
	Verdict    Verdict    `json:"verdict"`
	Action     Action     `json:"action"`
	Result     Result     `json:"result"`
	Deferred   string     `json:"deferred,omitempty"`
	FirstSeen  *time.Time `json:"first_seen,omitempty"`
	Evidence   Evidence   `json:"evidence"`
}

// TaskFinding is one lost, orphaned or stuck task, and what became of it.
type TaskFinding struct {
	ID          string     `json:"id"`
	Name        string     `json:"name,omitempty"`
	Verdict     Verdict    `json:"verdict"`
	Action      Action     `json:"action"`
	Owner       string     `json:"owner,omitempty"`
	AppLockID   string     `json:"app_lock_id,omitempty"`
	StateBefore string     `json:"state_before"`
	StateAfter  string     `json:"state_after"`
	Requeue     bool       `json:"requeue,omitempty"`
	Reason      string     `json:"reason,omitempty"`
	Result      Result     `json:"result"`
	Deferred    string     `json:"deferred,omitempty"`
	FirstSeen   *time.Time `json:"first_seen,omitempty"`
}

// Summary counts holdings and tasks by verdict and by result.
type Summary struct {
	// HoldingsByVerdict counts every holding, healthy ones included.
	HoldingsByVerdict map[Verdict]int `json:"by_verdict"`
	// FindingsByResult counts the findings (holdings not healthy).
	FindingsByResult map[Result]int  `json:"by_result"`
	TasksByVerdict   map[Verdict]int `json:"tasks_by_verdict"`
	TasksByResult    map[Result]int  `json:"tasks_by_result"`
	Released         int             `json:"released"`
	TasksUpdated     int             `json:"tasks_updated"`
	Suspects         int             `json:"suspects"`
	Deferred         int             `json:"deferred"`
}

// Exit codes of a pass, as the commands document them.
const (
	ExitOK       = 0
	ExitFailed   = 1
	ExitUsage    = 2
	ExitFindings = 3
	ExitGuarded  = 4
)

// ExitCode is the process exit code for the report: 1 when the pass failed,
// 4 when a guard held work back, and for an audit 3 when a real pass would
// release a lock or update a task (findings that need confirmation count).
func (r *Report) ExitCode() int {
	switch {
	case r.Error != "":
		return ExitFailed
	case r.Skipped != "":
		return ExitOK
	case len(r.Guards) > 0:
		return ExitGuarded
	case r.Mode == ModeAudit && r.wouldAct():
		return ExitFindings
	default:
		return ExitOK
	}
}

func (r *Report) wouldAct() bool {
	for _, f := range r.Findings {
		if f.Action == ActionRelease || f.Action == ActionSuspect {
			return true
		}
	}
	for _, t := range r.Tasks {
		if t.Action == ActionUpdate || t.Action == ActionSuspect {
			return true
		}
	}
	return false
}

func (r *Report) summarize() {
	s := Summary{HoldingsByVerdict: map[Verdict]int{}, FindingsByResult: map[Result]int{}, TasksByVerdict: map[Verdict]int{}, TasksByResult: map[Result]int{}}
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
