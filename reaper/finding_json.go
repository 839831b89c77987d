package reaper

import (
	"encoding/json"
	"time"

	"github.com/lock-reaper/lock-reaper/reaper/judge"
)

// findingJSON is a finding as reports write it: the holding's fields flat,
// with its task and resource spelled out.
type findingJSON struct {
	Key        string        `json:"key"`
	Kind       judge.Kind    `json:"kind"`
	Owner      string        `json:"owner"`
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
		Key: jd.Key, Kind: jd.Kind, Owner: jd.Owner, TaskID: jd.TaskID(), Resource: jd.Resource(), Registered: jd.Registered,
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
