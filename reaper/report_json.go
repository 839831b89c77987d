package reaper

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/lock-reaper/lock-reaper/heartbeat"
	"github.com/lock-reaper/lock-reaper/internal/humantext"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
	"github.com/lock-reaper/lock-reaper/reaper/pulpdb"
	"github.com/lock-reaper/lock-reaper/reaper/redislocks"
)

// The JSON shapes of a report, as every command prints them (a pass's
// report, explain, locks, the status page's data): the judge's types carry
// no JSON of their own. A task's id is task_id wherever it stands beside
// other fields, id inside a task's own object. The names are pinned by the
// command line's TestJSONShapes (internal/cli/testdata/json-shapes.json).

// PodEvidence is an owner's pod evidence: the rule that decided, and the pod.
type PodEvidence struct {
	Rule heartbeat.PodRule `json:"rule"`
	Pod
}

// Pod is what the pod rules looked at of one pod.
type Pod struct {
	Name            string     `json:"pod"`
	UID             string     `json:"uid,omitempty"`
	Phase           string     `json:"phase"`
	Reason          string     `json:"reason,omitempty"`
	Terminating     bool       `json:"terminating,omitempty"`
	Ready           bool       `json:"ready"`
	ContainersReady bool       `json:"containers_ready"`
	Disruption      string     `json:"disruption,omitempty"`
	StartTime       *time.Time `json:"start_time,omitempty"`
	Container       *Container `json:"container,omitempty"`
	API             *Container `json:"api_container,omitempty"`
}

// Container is one container of a pod.
type Container struct {
	Name           string       `json:"name"`
	Running        bool         `json:"running"`
	StartedAt      *time.Time   `json:"started_at,omitempty"`
	FinishedAt     *time.Time   `json:"finished_at,omitempty"`
	Terminated     *Termination `json:"terminated,omitempty"`
	LastTerminated *Termination `json:"last_terminated,omitempty"`
	Restarts       int32        `json:"restarts"`
}

// Termination is how a container ended.
type Termination struct {
	Reason     string     `json:"reason,omitempty"`
	ExitCode   int32      `json:"exit_code"`
	FinishedAt *time.Time `json:"finished_at,omitempty"`
}

// PodEvidenceOf is e in JSON's form; nil stays nil.
func PodEvidenceOf(e *heartbeat.PodEvidence) *PodEvidence {
	if e == nil {
		return nil
	}
	p := e.Pod
	return &PodEvidence{Rule: e.Rule, Pod: Pod{Name: p.Name, UID: p.UID, Phase: p.Phase, Reason: p.Reason, Terminating: p.Terminating,
		Ready: p.Ready, ContainersReady: p.ContainersReady, Disruption: p.Disruption, StartTime: p.StartTime,
		Container: containerOf(p.Container), API: containerOf(p.API)}}
}

// judged is e in the judge's form; nil stays nil.
func (e *PodEvidence) judged() *heartbeat.PodEvidence {
	if e == nil {
		return nil
	}
	p := e.Pod
	return &heartbeat.PodEvidence{Rule: e.Rule, Pod: heartbeat.Pod{Name: p.Name, UID: p.UID, Phase: p.Phase, Reason: p.Reason, Terminating: p.Terminating,
		Ready: p.Ready, ContainersReady: p.ContainersReady, Disruption: p.Disruption, StartTime: p.StartTime,
		Container: p.Container.judged(), API: p.API.judged()}}
}

func containerOf(c *heartbeat.Container) *Container {
	if c == nil {
		return nil
	}
	return &Container{Name: c.Name, Running: c.Running, StartedAt: c.StartedAt, FinishedAt: c.FinishedAt,
		Terminated: (*Termination)(c.Terminated), LastTerminated: (*Termination)(c.LastTerminated), Restarts: c.Restarts}
}

func (c *Container) judged() *heartbeat.Container {
	if c == nil {
		return nil
	}
	return &heartbeat.Container{Name: c.Name, Running: c.Running, StartedAt: c.StartedAt, FinishedAt: c.FinishedAt,
		Terminated: (*heartbeat.Termination)(c.Terminated), LastTerminated: (*heartbeat.Termination)(c.LastTerminated), Restarts: c.Restarts}
}

// Evidence is what a verdict rested on (judge.Evidence).
type Evidence struct {
	OwnerLiveness   heartbeat.Liveness  `json:"owner_liveness"`
	HeartbeatAge    *Seconds            `json:"heartbeat_age,omitempty"`
	TaskState       string              `json:"task_state,omitempty"`
	FinishedAge     *Seconds            `json:"finished_age,omitempty"`
	AppLock         string              `json:"app_lock,omitempty"`
	AppLockLiveness *heartbeat.Liveness `json:"app_lock_liveness,omitempty"`
	Via             string              `json:"via,omitempty"`
	Kubernetes      *PodEvidence        `json:"kubernetes,omitempty"`
}

func evidenceOf(e judge.Evidence) Evidence {
	return Evidence{OwnerLiveness: e.OwnerLiveness, HeartbeatAge: SecondsOf(e.HeartbeatAge), TaskState: e.TaskState,
		FinishedAge: SecondsOf(e.FinishedAge), AppLock: e.AppLock, AppLockLiveness: e.AppLockLiveness, Via: e.Via,
		Kubernetes: PodEvidenceOf(e.Kubernetes)}
}

func (e Evidence) judged() judge.Evidence {
	return judge.Evidence{OwnerLiveness: e.OwnerLiveness, HeartbeatAge: e.HeartbeatAge.judged(), TaskState: e.TaskState,
		FinishedAge: e.FinishedAge.judged(), AppLock: e.AppLock, AppLockLiveness: e.AppLockLiveness, Via: e.Via,
		Kubernetes: e.Kubernetes.judged()}
}

// OwnerReport is one lock owner, as a report lists it (judge.OwnerReport).
type OwnerReport struct {
	Name         string       `json:"name"`
	Liveness     string       `json:"liveness"`
	HeartbeatAge *Seconds     `json:"heartbeat_age,omitempty"`
	Holdings     int          `json:"holdings"`
	Kubernetes   *PodEvidence `json:"kubernetes,omitempty"`
}

// OwnerReportsOf lists the plan's owner reports in JSON's form.
func OwnerReportsOf(owners []judge.OwnerReport) []OwnerReport {
	out := make([]OwnerReport, len(owners))
	for i, o := range owners {
		out[i] = OwnerReport{Name: o.Name, Liveness: o.Liveness, HeartbeatAge: SecondsOf(o.HeartbeatAge), Holdings: o.Holdings,
			Kubernetes: PodEvidenceOf(o.Kubernetes)}
	}
	return out
}

// Ignored is a key under a lock prefix that is not a Pulp lock (redislocks.Ignored).
type Ignored struct {
	Key    string `json:"key"`
	Type   string `json:"type"`
	Reason string `json:"reason"`
}

// Guard says why a pass held back work (judge.Guard, worded by GuardReason).
type Guard struct {
	Name   string `json:"name"`
	Reason string `json:"reason"`
	// UncommittedWrite is the session behind the uncommitted-task-write
	// guard.
	UncommittedWrite *UncommittedWrite `json:"uncommitted_write,omitempty"`
}

func ignoredOf(ig []redislocks.Ignored) []Ignored {
	out := make([]Ignored, len(ig))
	for i, x := range ig {
		out[i] = Ignored(x)
	}
	return out
}

// GuardsOf lists the plan's guards in JSON's form.
func GuardsOf(gs []judge.Guard) []Guard {
	out := make([]Guard, len(gs))
	for i, g := range gs {
		out[i] = Guard{Name: g.Name, Reason: GuardReason(g)}
	}
	return out
}

// TaskVerdict is the verdict on one task as JSON writes it (judge.TaskJudgement).
type TaskVerdict struct {
	ID          string        `json:"id"`
	Name        string        `json:"name,omitempty"`
	Verdict     judge.Verdict `json:"verdict"`
	Action      judge.Action  `json:"action"`
	Owner       string        `json:"owner,omitempty"`
	AppLockID   string        `json:"app_lock_id,omitempty"`
	StateBefore string        `json:"state_before"`
	StateAfter  string        `json:"state_after"`
	ClearClaim  bool          `json:"requeue,omitempty"`
	Reason      string        `json:"reason,omitempty"`
	Deferred    string        `json:"deferred,omitempty"`
	FirstSeen   *time.Time    `json:"first_seen,omitempty"`
	Stranded    *StrandedJSON `json:"stranded,omitempty"`
	// NotStartedFor is how long a claimed-not-started task has been seen
	// claimed and not started, at least.
	NotStartedFor Seconds `json:"not_started_for,omitempty"`
}

// UnguardedResource is a resource an unprotected task reserves, with its
// other holders (unguarded).
type UnguardedResource struct {
	Resource     string           `json:"resource"`
	Need         judge.Kind       `json:"need"`
	OtherHolders []ResourceHolder `json:"other_holders"`
}

// ResourceHolder is one holding of a resource. It is no HoldingRef: its
// JSON has owner before kind, and no key (the resource is its list's).
type ResourceHolder struct {
	Owner string     `json:"owner"`
	Kind  judge.Kind `json:"kind"`
}

// TaskVerdictOf is tj in JSON's form; nil stays nil.
func TaskVerdictOf(tj *judge.TaskJudgement) *TaskVerdict {
	if tj == nil {
		return nil
	}
	return &TaskVerdict{ID: tj.ID, Name: tj.Name, Verdict: tj.Verdict, Action: tj.Action, Owner: tj.Owner, AppLockID: tj.AppLockID,
		StateBefore: tj.StateBefore, StateAfter: tj.StateAfter, ClearClaim: tj.ClearClaim, Reason: pulpdb.TaskReason(tj), Deferred: tj.Deferred,
		FirstSeen: tj.FirstSeen, Stranded: strandedJSONOf(tj.Stranded), NotStartedFor: Seconds(tj.NotStartedFor)}
}

// judged is v in the judge's form (without what JSON does not carry: the
// task lock a requeue waits for; its reason follows from the rest).
func (v TaskVerdict) judged() *judge.TaskJudgement {
	return &judge.TaskJudgement{ID: v.ID, Name: v.Name, Verdict: v.Verdict, Action: v.Action, Owner: v.Owner, AppLockID: v.AppLockID,
		StateBefore: v.StateBefore, StateAfter: v.StateAfter, ClearClaim: v.ClearClaim, Deferred: v.Deferred, FirstSeen: v.FirstSeen,
		Stranded: v.Stranded.judged(), NotStartedFor: time.Duration(v.NotStartedFor)}
}

// One holding is printed in several shapes: a finding of a report, a holder
// in explain, a line of locks. They are built from the parts below, defined
// once, so that a field added to a holding appears in every shape alike;
// each shape places the parts in the order its pinned JSON has. (A
// ResourceHolder is the odd one: owner before kind and no key, as reports
// have always written a task's other holders.)

// HoldingRef names one holding; every shape of a holding starts with it.
type HoldingRef struct {
	Key   string     `json:"key"`
	Kind  judge.Kind `json:"kind"`
	Owner string     `json:"owner"`
}

func refOf(h *judge.Holding) HoldingRef { return HoldingRef{Key: h.Key, Kind: h.Kind, Owner: h.Owner} }

// OwnerView is how the holding's owner was seen, after its liveness: locks
// keeps that as text and explain as a heartbeat.Liveness, so it stands
// outside.
type OwnerView struct {
	HeartbeatAge *Seconds `json:"heartbeat_age,omitempty"`
	// Kubernetes is the owner's pod evidence, when the pass read pods.
	Kubernetes *PodEvidence `json:"kubernetes,omitempty"`
}

// HoldingVerdict is what a pass would do with the holding.
type HoldingVerdict struct {
	Verdict judge.Verdict `json:"verdict"`
	Action  judge.Action  `json:"action"`
	// Deferred says why a pass would hold the release back.
	Deferred string `json:"deferred,omitempty"`
}

// HoldingView is a judged holding's parts in JSON's form, for the shapes
// that show a holding with its owner's state (explain, locks); it is not
// printed itself.
type HoldingView struct {
	HoldingRef
	Liveness heartbeat.Liveness
	OwnerView
	HoldingVerdict
	// Task is the task the holding is held for (HoldingTask).
	Task string
}

// PodViews keeps one JSON copy of each owner's pod evidence: an owner's
// holdings share its evidence, and so do their views. The zero value copies
// every time.
type PodViews map[*heartbeat.PodEvidence]*PodEvidence

func (p PodViews) of(e *heartbeat.PodEvidence) *PodEvidence {
	pod, ok := p[e]
	if !ok {
		pod = PodEvidenceOf(e)
		if p != nil {
			p[e] = pod
		}
	}
	return pod
}

// HoldingViewOf is jd's view, its pod evidence taken from pods.
func HoldingViewOf(jd *judge.Judgement, pods PodViews) HoldingView {
	e := jd.Evidence()
	return HoldingView{
		HoldingRef:     refOf(&jd.Holding),
		Liveness:       e.OwnerLiveness,
		OwnerView:      OwnerView{HeartbeatAge: SecondsOf(e.HeartbeatAge), Kubernetes: pods.of(e.Kubernetes)},
		HoldingVerdict: HoldingVerdict{Verdict: jd.Verdict, Action: jd.Action, Deferred: jd.Deferred},
		Task:           HoldingTask(&jd.Holding, e.Via),
	}
}

// findingJSON is a finding as reports write it: the holding's fields flat,
// with its task and resource spelled out, and the evidence nested (a
// report's verdict parts stand around its result, so they stay flat here).
type findingJSON struct {
	HoldingRef
	TaskID     string        `json:"task_id,omitempty"`
	Resource   string        `json:"resource,omitempty"`
	Registered bool          `json:"registered"`
	Verdict    judge.Verdict `json:"verdict"`
	Action     judge.Action  `json:"action"`
	Result     Result        `json:"result"`
	Deferred   string        `json:"deferred,omitempty"`
	FirstSeen  *time.Time    `json:"first_seen,omitempty"`
	Evidence   Evidence      `json:"evidence"`
}

// MarshalJSON writes a finding as a report lists it.
func (f Finding) MarshalJSON() ([]byte, error) {
	jd := f.Judgement
	return json.Marshal(findingJSON{
		HoldingRef: refOf(&jd.Holding), TaskID: jd.TaskID(), Resource: jd.Resource(), Registered: jd.Registered,
		Verdict: jd.Verdict, Action: jd.Action, Result: f.Result, Deferred: jd.Deferred, FirstSeen: jd.FirstSeen, Evidence: evidenceOf(jd.Evidence()),
	})
}

// UnmarshalJSON reads what MarshalJSON wrote; the task and resource follow
// from the key.
func (f *Finding) UnmarshalJSON(b []byte) error {
	var v findingJSON
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	jd := judge.Judgement{
		Holding: judge.Holding{Key: v.Key, Kind: v.Kind, Owner: v.Owner, Registered: v.Registered},
		Verdict: v.Verdict, Action: v.Action, Deferred: v.Deferred, FirstSeen: v.FirstSeen,
	}
	jd.SetEvidence(v.Evidence.judged())
	*f = Finding{Judgement: &jd, Result: v.Result}
	return nil
}

// taskFindingJSON is a task finding as reports write it: the task verdict's
// members, then the pass's result.
type taskFindingJSON struct {
	TaskVerdict
	Resources []UnguardedResource `json:"resources,omitempty"`
	Result    Result              `json:"result"`
}

// MarshalJSON writes a task finding as a report lists it.
func (f TaskFinding) MarshalJSON() ([]byte, error) {
	return json.Marshal(taskFindingJSON{TaskVerdict: *TaskVerdictOf(f.TaskJudgement), Resources: f.Resources, Result: f.Result})
}

// UnmarshalJSON reads what MarshalJSON wrote.
func (f *TaskFinding) UnmarshalJSON(b []byte) error {
	var v taskFindingJSON
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*f = TaskFinding{TaskJudgement: v.TaskVerdict.judged(), Result: v.Result, Resources: v.Resources}
	return nil
}

// Seconds is an age as JSON writes it: seconds, to the millisecond.
type Seconds time.Duration

// SecondsOf is d in JSON's form, the same value: the evidence of one owner's
// holdings shares one age, and so do their lines.
func SecondsOf(d *judge.Duration) *Seconds { return (*Seconds)(d) }

// judged is s in the judge's form, the same value.
func (s *Seconds) judged() *judge.Duration { return (*judge.Duration)(s) }

// String rounds to what a reader needs: milliseconds under a second, tenths
// under a minute, whole seconds above.
func (s Seconds) String() string { return humantext.Short(time.Duration(s)) }

// MarshalJSON renders seconds with millisecond precision.
func (s Seconds) MarshalJSON() ([]byte, error) {
	return []byte(strconv.FormatFloat(time.Duration(s).Seconds(), 'f', 3, 64)), nil
}

// UnmarshalJSON reads the seconds MarshalJSON wrote.
func (s *Seconds) UnmarshalJSON(b []byte) error {
	secs, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		return fmt.Errorf("a duration in seconds: %w", err)
	}
	*s = Seconds(secs * float64(time.Second))
	return nil
}
