package judge

import (
	"encoding/json"
	"time"
)

// judgementJSON is a judgement as reports write it: the holding's fields
// flat, with its task and resource spelled out.
type judgementJSON struct {
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

// MarshalJSON writes a judgement as a report's finding.
func (jd Judgement) MarshalJSON() ([]byte, error) {
	return json.Marshal(judgementJSON{
		Key: jd.Key, Kind: jd.Kind, Owner: jd.Owner, TaskID: jd.TaskID(), Resource: jd.Resource(), Registered: jd.Registered,
		Verdict: jd.Verdict, Action: jd.Action, Result: jd.Result, Deferred: jd.Deferred, FirstSeen: jd.FirstSeen, Evidence: jd.Evidence,
	})
}

// UnmarshalJSON reads what MarshalJSON wrote; the task and resource follow
// from the key.
func (jd *Judgement) UnmarshalJSON(b []byte) error {
	var v judgementJSON
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*jd = Judgement{
		Holding: Holding{Key: v.Key, Kind: v.Kind, Owner: v.Owner, Registered: v.Registered},
		Verdict: v.Verdict, Action: v.Action, Result: v.Result, Deferred: v.Deferred, FirstSeen: v.FirstSeen, Evidence: v.Evidence,
	}
	return nil
}

// taskJudgementJSON is a task judgement as reports write it.
type taskJudgementJSON struct {
	ID          string              `json:"id"`
	Name        string              `json:"name,omitempty"`
	Verdict     Verdict             `json:"verdict"`
	Action      Action              `json:"action"`
	Owner       string              `json:"owner,omitempty"`
	AppLockID   string              `json:"app_lock_id,omitempty"`
	StateBefore string              `json:"state_before"`
	StateAfter  string              `json:"state_after"`
	Requeue     bool                `json:"requeue,omitempty"`
	Reason      string              `json:"reason,omitempty"`
	Result      Result              `json:"result"`
	Deferred    string              `json:"deferred,omitempty"`
	FirstSeen   *time.Time          `json:"first_seen,omitempty"`
	Resources   []UnguardedResource `json:"resources,omitempty"`
}

// MarshalJSON writes a task judgement as a report's task: a cleared claim
// is a requeue.
func (tj TaskJudgement) MarshalJSON() ([]byte, error) {
	return json.Marshal(taskJudgementJSON{
		ID: tj.ID, Name: tj.Name, Verdict: tj.Verdict, Action: tj.Action, Owner: tj.Owner, AppLockID: tj.AppLockID,
		StateBefore: tj.StateBefore, StateAfter: tj.StateAfter, Requeue: tj.ClearClaim, Reason: tj.Reason,
		Result: tj.Result, Deferred: tj.Deferred, FirstSeen: tj.FirstSeen, Resources: tj.Resources,
	})
}

// UnmarshalJSON reads what MarshalJSON wrote.
func (tj *TaskJudgement) UnmarshalJSON(b []byte) error {
	var v taskJudgementJSON
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*tj = TaskJudgement{
		ID: v.ID, Name: v.Name, Verdict: v.Verdict, Action: v.Action, Owner: v.Owner, AppLockID: v.AppLockID,
		StateBefore: v.StateBefore, StateAfter: v.StateAfter, ClearClaim: v.Requeue, Reason: v.Reason,
		Result: v.Result, Deferred: v.Deferred, FirstSeen: v.FirstSeen, Resources: v.Resources,
	}
	return nil
}
