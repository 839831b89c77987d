package pulpdb

import (
	"encoding/json"
	"time"

	"github.com/lock-reaper/lock-reaper/reaper/judge"
)

// TaskRowJSON is a task row as explain and the status page print it.
type TaskRowJSON struct {
	ID        string     `json:"id"`
	Name      string     `json:"name"`
	State     string     `json:"state"`
	AppLockID string     `json:"app_lock_id,omitempty"`
	Reserved  []string   `json:"reserved_resources_record"`
	Finished  *time.Time `json:"finished_at,omitempty"`
	Created   time.Time  `json:"pulp_created"`
}

// JSON is the row in its printed form.
func (r TaskRow) JSON() TaskRowJSON {
	return TaskRowJSON{ID: r.ID, Name: r.Name, State: r.State, AppLockID: r.AppLockID, Reserved: r.Reserved, Finished: r.FinishedAt, Created: r.Created}
}

// Row is the row the printed form describes.
func (j TaskRowJSON) Row() TaskRow {
	return TaskRow{Task: judge.Task{ID: j.ID, Name: j.Name, State: j.State, AppLockID: j.AppLockID, Reserved: j.Reserved, FinishedAt: j.Finished}, Created: j.Created}
}

// MarshalJSON writes the printed form.
func (r TaskRow) MarshalJSON() ([]byte, error) { return json.Marshal(r.JSON()) }

// UnmarshalJSON reads the printed form.
func (r *TaskRow) UnmarshalJSON(b []byte) error {
	var j TaskRowJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*r = j.Row()
	return nil
}
