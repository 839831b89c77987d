package pulpdb

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/reaper/judge"
)

// TestTaskRowJSON: a task row prints under pulpcore's column names, leaves
// out a missing claim and finish, and reads back as the same row.
func TestTaskRowJSON(t *testing.T) {
	t.Parallel()
	created := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	finished := created.Add(time.Minute)
	waiting := TaskRow{Task: judge.Task{ID: "t1", Name: "sync", State: judge.StateWaiting, Reserved: []string{"repo-1", "shared:dom"}}, Created: created}
	b, err := json.Marshal(waiting)
	require.NoError(t, err)
	require.JSONEq(t, `{"id": "t1", "name": "sync", "state": "waiting", "reserved_resources_record": ["repo-1", "shared:dom"],
		"pulp_created": "2026-12-07T10:00:00Z"}`, string(b))

	done := TaskRow{Task: judge.Task{ID: "t2", Name: "sync", State: judge.StateCompleted, AppLockID: "w1", Reserved: []string{}, FinishedAt: &finished}, Created: created}
	for _, row := range []TaskRow{waiting, done} {
		b, err := json.Marshal(row)
		require.NoError(t, err)
		var back TaskRow
		require.NoError(t, json.Unmarshal(b, &back))
		require.Equal(t, row, back)
	}
	require.Error(t, json.Unmarshal([]byte(`{"id": 1}`), &TaskRow{}))
}
