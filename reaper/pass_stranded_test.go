package reaper_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/reaper"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
)

// setVersions writes an hstore versions column of one row.
func (f *fixture) setVersions(table, id string, pairs ...string) {
	f.T.Helper()
	_, err := f.DB.Pool.Exec(f.Ctx, `UPDATE `+table+` SET versions = hstore($2::text[]) WHERE pulp_id = $1`, id, pairs)
	require.NoError(f.T, err)
}

// TestPassStranded: a waiting task claimed by a live worker too old for it
// (pulpcore left app_lock set and released its locks) is requeued once
// confirmed while a compatible worker is online, and only reported, with
// the versions it waits for, while none is.
func TestPassStranded(t *testing.T) {
	t.Parallel()
	for _, compatibleOnline := range []bool{true, false} {
		t.Run(map[bool]string{true: "compatible worker online", false: "none online"}[compatibleOnline], func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			old := f.Worker("9@old", time.Second)
			f.setVersions("core_appstatus", old, "core", "3.116.0", "file", "1.11.0")
			other := f.Worker("9@other", time.Second)
			if compatibleOnline {
				f.setVersions("core_appstatus", other, "core", "3.116.0", "file", "1.12.0")
			} else {
				f.setVersions("core_appstatus", other, "core", "3.116.0", "file", "1.12.0rc1")
			}
			task := f.Task("waiting", old, nil, -1)
			f.setVersions("core_task", task, "file", "1.12.0")

			r := f.reaper(nil)
			rep := f.pass(r, reaper.ModeOnce)
			require.Empty(t, rep.Error)
			tf := taskFindingFor(rep, task)
			require.NotNil(t, tf)
			require.Equal(t, judge.VerdictStranded, tf.Verdict)
			require.NotNil(t, tf.Stranded)
			_, lock, _, _ := f.TaskRow(task)
			require.NotNil(t, lock, "never requeued on first sight")
			if !compatibleOnline {
				require.Equal(t, reaper.ResultReported, tf.Result)
				require.Equal(t, "waits for a worker with file ≥ 1.12.0; none of 2 online workers has it", tf.Stranded.String())
			} else {
				require.Equal(t, reaper.ResultSuspected, tf.Result)
				require.Equal(t, "needs file ≥ 1.12.0; its worker has file 1.11.0; 1 of 2 online workers have it", tf.Stranded.String())
			}

			f.ageSuspects(3 * time.Minute)
			rep = f.pass(r, reaper.ModeOnce)
			state, lock, _, _ := f.TaskRow(task)
			require.Equal(t, "waiting", state)
			if !compatibleOnline {
				require.NotNil(t, lock, "not requeued while no online worker can run it")
				require.Equal(t, reaper.ResultReported, taskFindingFor(rep, task).Result)
				return
			}
			require.Nil(t, lock, "requeued once confirmed")
			require.Equal(t, reaper.ResultUpdated, taskFindingFor(rep, task).Result)

			// The next too-old worker strands it again: not requeued again
			// before another confirm_after.
			_, err := f.DB.Pool.Exec(f.Ctx, `UPDATE core_task SET app_lock_id = $2 WHERE pulp_id = $1`, task, old)
			require.NoError(t, err)
			rep = f.pass(r, reaper.ModeOnce)
			_, lock, _, _ = f.TaskRow(task)
			require.NotNil(t, lock, "stranded again: a suspect once more")
			require.Equal(t, reaper.ResultSuspected, taskFindingFor(rep, task).Result)
		})
	}
}
