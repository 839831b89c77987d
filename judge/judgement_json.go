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
		Verdict: jd.Verdict, Action: jd.Action, Result: jd.Result, Deferred: jd.Deferred, FirstSeen: jd.FirstSeen, Evidence: jd.Evidence(),
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
		Verdict: v.Verdict, Action: v.Action, Result: v.Result, Deferred: v.Deferred, FirstSeen: v.FirstSeen,
	}
	jd.SetEvidence(v.Evidence)
	return nil
}
