package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/internal/exitcode"
	"github.com/lock-reaper/lock-reaper/internal/testing/passtest"
	"github.com/lock-reaper/lock-reaper/reaper"
	"github.com/lock-reaper/lock-reaper/reaper/pulpdb"

	"github.com/lock-reaper/lock-reaper/internal/testing/testenv"
)

// opsTerminal is a Stdin that says it is a terminal, with the operator's
// typed answer.
type opsTerminal struct{ io.Reader }

func (opsTerminal) IsTerminal() bool { return true }

// runWithStdin is run with a Stdin.
func runWithStdin(t *testing.T, env map[string]string, stdin io.Reader, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := Main(context.Background(), Env{
		Args: args, Stdin: stdin, Stdout: &stdout, Stderr: &stderr, Version: "test",
		LookupEnv: testenv.LookupEnv(env),
	})
	return code, stdout.String(), stderr.String()
}

// opsReleaseFleet: a dead worker with a lost running task, a waiting task it
// claimed and a leaked finished one; a second dead worker and a live one
// that a release of the first must not touch. Two of three workers dead
// would trip the mass-death guard of a normal pass: they died a minute ago
// (ttl 30 s, grace 30 s, heartbeat 2 minutes old), within the guard's window.
type opsReleaseFleet struct {
	*opsFleet
	running, waiting, done, otherDead, healthy string
}

func newOpsReleaseFleet(t *testing.T) *opsReleaseFleet {
	f := &opsReleaseFleet{opsFleet: newOpsFleet(t)}
	dead := f.worker("1@dead", 2*time.Minute)
	other := f.worker("2@dead", 2*time.Minute)
	live := f.worker("1@live", 0)
	f.running = f.task("running", dead, []string{passtest.Repo(), "shared:" + passtest.Domain}, time.Hour)
	f.acquire("1@dead", f.running, f.reserved(f.running)...)
	f.waiting = f.task("waiting", dead, []string{passtest.Repo()}, time.Hour)
	f.acquire("1@dead", f.waiting, f.reserved(f.waiting)...)
	f.done = f.task("completed", dead, []string{passtest.Repo()}, 2*time.Hour)
	f.acquire("1@dead", f.done)
	f.otherDead = f.task("running", other, []string{passtest.Repo(), "shared:" + passtest.Domain}, time.Hour)
	f.acquire("2@dead", f.otherDead, f.reserved(f.otherDead)...)
	f.healthy = f.task("running", live, []string{passtest.Repo(), "shared:" + passtest.Domain}, time.Minute)
	f.acquire("1@live", f.healthy, f.reserved(f.healthy)...)
	return f
}

func (f *opsReleaseFleet) reserved(taskID string) []string {
	f.t.Helper()
	var r []string
	require.NoError(f.t, f.db.Pool.QueryRow(f.ctx, `SELECT reserved_resources_record FROM core_task WHERE pulp_id = $1`, taskID).Scan(&r))
	return r
}

// holds says whether the owner still holds the task lock or any resource
// lock of the task.
func (f *opsReleaseFleet) holds(owner, taskID string) bool {
	if f.get("task:"+taskID) == owner {
		return true
	}
	for _, r := range f.reserved(taskID) {
		if name, shared := strings.CutPrefix(r, "shared:"); shared {
			for _, m := range f.members("pulp:resource_lock:" + name) {
				if m == owner {
					return true
				}
			}
		} else if f.get("pulp:resource_lock:"+r) == owner {
			return true
		}
	}
	return false
}

func (f *opsReleaseFleet) requireUntouched() {
	f.t.Helper()
	for _, id := range []string{f.running, f.waiting, f.done} {
		require.True(f.t, f.holds("1@dead", id), id)
	}
	state, claimed := f.state(f.running)
	require.Equal(f.t, "running", state)
	require.True(f.t, claimed)
	state, claimed = f.state(f.waiting)
	require.Equal(f.t, "waiting", state)
	require.True(f.t, claimed)
}

func TestReleaseDeadOwner(t *testing.T) {
	t.Parallel()
	f := newOpsReleaseFleet(t)
	code, out, _ := run(t, f.env, "audit")
	require.Equal(t, exitcode.Guarded, code, "a normal pass is held back by the mass-death guard")
	require.Regexp(t, `; \d+ held back by the mass-death guard until pulpcore deletes the dead worker rows, the pods prove the deaths, or a pass runs with --force`, out)
	require.NotContains(t, out, "deferred to the next pass", "the guard's hold is not for the next pass")

	// A dry run says it is the release's, not an audit.
	code, out, stderr := run(t, f.env, "release", "--owner", "1@dead", "--dry-run")
	require.Equal(t, exitcode.Findings, code, stderr)
	require.True(t, strings.HasPrefix(out, "lock-reaper release (dry run: nothing was written) at "), firstLine(out))

	code, out, stderr = run(t, f.env, "release", "--owner", "1@dead", "--dry-run", "--output", "json")
	require.Equal(t, exitcode.Findings, code, stderr)
	var dry reaper.Report
	require.NoError(t, json.Unmarshal([]byte(out), &dry))
	require.Equal(t, reaper.ModeAudit, dry.Mode)
	require.Equal(t, 6, dry.Summary.FindingsByResult[reaper.ResultWouldRelease])
	f.requireUntouched()

	code, out, stderr = run(t, f.env, "release", "--owner", "1@dead", "--yes", "--output", "json")
	require.Equal(t, exitcode.OK, code, stderr)
	var rep reaper.Report
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	require.Equal(t, reaper.ModeRelease, rep.Mode)
	require.Equal(t, 6, rep.Summary.Released)
	require.Equal(t, 2, rep.Summary.TasksUpdated)
	require.Empty(t, rep.Guards)
	for _, fd := range rep.Findings {
		require.Equal(t, "1@dead", fd.Owner)
		require.Equal(t, reaper.ResultReleased, fd.Result)
	}

	for _, id := range []string{f.running, f.waiting, f.done} {
		require.False(t, f.holds("1@dead", id), id)
	}
	require.Empty(t, f.members("pulp:owner_locks:1@dead"))
	require.NotContains(t, f.members("pulp:active_owners"), "1@dead")
	state, _ := f.state(f.running)
	require.Equal(t, "canceled", state)
	state, claimed := f.state(f.waiting)
	require.Equal(t, "waiting", state)
	require.False(t, claimed, "requeued")
	state, _ = f.state(f.done)
	require.Equal(t, "completed", state)

	require.True(t, f.holds("2@dead", f.otherDead), "another dead owner is not touched")
	state, _ = f.state(f.otherDead)
	require.Equal(t, "running", state)
	require.True(t, f.holds("1@live", f.healthy))
	state, _ = f.state(f.healthy)
	require.Equal(t, "running", state)

	// Who ran it and what it did, at WARN.
	var started, finished map[string]any
	for _, line := range strings.Split(strings.TrimSpace(stderr), "\n") {
		var rec map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &rec), line)
		switch rec["msg"] {
		case "break-glass release started":
			started = rec
		case "break-glass release finished":
			finished = rec
		}
	}
	require.NotNil(t, started, stderr)
	require.Equal(t, "WARN", started["level"])
	require.NotEmpty(t, started["operator"])
	require.NotEmpty(t, started["operator_host"])
	require.Equal(t, "1@dead", started["owner"])
	require.NotNil(t, finished, stderr)
	require.Equal(t, "WARN", finished["level"])
	require.EqualValues(t, 6, finished["released"])
	require.EqualValues(t, 2, finished["tasks_updated"])

	// Again: nothing left, nothing to confirm.
	code, out, stderr = run(t, f.env, "release", "--owner", "1@dead", "--yes")
	require.Equal(t, exitcode.OK, code, stderr)
	require.Contains(t, out, "lock-reaper release at ")
	require.Contains(t, out, "released 0 holdings")
}

func TestReleaseRefusesAliveOwner(t *testing.T) {
	t.Parallel()
	f := newOpsReleaseFleet(t)
	code, out, _ := run(t, f.env, "release", "--owner", "1@live", "--yes", "--output", "json")
	require.Equal(t, exitcode.Guarded, code)
	var rep reaper.Report
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	require.Equal(t, "alive-owner", rep.Guards[0].Name)
	require.Contains(t, rep.Guards[0].Reason, "rerun with --force")
	require.Equal(t, 0, rep.Summary.Released)
	require.True(t, f.holds("1@live", f.healthy))

	// On a terminal it refuses before asking.
	code, _, stderr := runWithStdin(t, f.env, opsTerminal{strings.NewReader("y\n")}, "release", "--owner", "1@live")
	require.Equal(t, exitcode.Guarded, code)
	require.Contains(t, stderr, "refused: 1@live has an online AppStatus row")
	require.NotContains(t, stderr, "[y/N]")
	require.True(t, f.holds("1@live", f.healthy))

	code, out, stderr = run(t, f.env, "release", "--owner", "1@live", "--yes", "--force", "--output", "json")
	require.Equal(t, exitcode.OK, code, stderr)
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	require.Equal(t, 3, rep.Summary.Released, out)
	require.False(t, f.holds("1@live", f.healthy))
	state, _ := f.state(f.healthy)
	require.Equal(t, "canceled", state)
	f.requireUntouched()
}

func TestReleaseNeedsYesWithoutTerminal(t *testing.T) {
	t.Parallel()
	f := newOpsReleaseFleet(t)
	code, out, stderr := runWithStdin(t, f.env, strings.NewReader("y\n"), "release", "--owner", "1@dead")
	require.Equal(t, exitcode.Usage, code)
	require.Empty(t, out)
	require.Contains(t, stderr, "stdin is not a terminal: rerun with --yes")
	f.requireUntouched()

	// An unknown or alive owner is said first: --yes would not help.
	code, out, stderr = runWithStdin(t, f.env, strings.NewReader("y\n"), "release", "--owner", "1@daed")
	require.Equal(t, exitUnknownOwner, code, stderr)
	require.Empty(t, out)
	require.Contains(t, stderr, "owner 1@daed holds no lock and has no AppStatus row")
	require.NotContains(t, stderr, "--yes")
	code, _, stderr = runWithStdin(t, f.env, strings.NewReader("y\n"), "release", "--owner", "1@live")
	require.Equal(t, exitcode.Guarded, code, stderr)
	require.Contains(t, stderr, "refused: 1@live has an online AppStatus row")
	require.NotContains(t, stderr, "rerun with --yes")
	f.requireUntouched()

	code, _, stderr = run(t, f.env, "release")
	require.Equal(t, exitcode.Usage, code)
	require.Contains(t, stderr, "--owner is required")
	code, _, _ = run(t, f.env, "release", "--owner", "bad\nname", "--yes")
	require.Equal(t, exitcode.Usage, code)
}

func TestReleaseConfirmationPrompt(t *testing.T) {
	t.Parallel()
	f := newOpsReleaseFleet(t)
	code, out, stderr := runWithStdin(t, f.env, opsTerminal{strings.NewReader("n\n")}, "release", "--owner", "1@dead")
	require.Equal(t, exitAborted, code)
	require.Empty(t, out)
	require.Contains(t, stderr, "Release 6 holdings of 1@dead and update 2 tasks? [y/N] ")
	require.Contains(t, stderr, "aborted; nothing was written")
	f.requireUntouched()

	code, _, _ = runWithStdin(t, f.env, opsTerminal{strings.NewReader("")}, "release", "--owner", "1@dead")
	require.Equal(t, exitAborted, code, "no answer is no")
	f.requireUntouched()

	code, out, stderr = runWithStdin(t, f.env, opsTerminal{strings.NewReader("y\n")}, "release", "--owner", "1@dead", "--output", "json")
	require.Equal(t, exitcode.OK, code, stderr)
	require.Contains(t, stderr, "Release 6 holdings of 1@dead and update 2 tasks? [y/N] ")
	var rep reaper.Report
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	require.Equal(t, reaper.ModeRelease, rep.Mode)
	require.Equal(t, 6, rep.Summary.Released)
	require.Equal(t, 2, rep.Summary.TasksUpdated)
	for _, id := range []string{f.running, f.waiting, f.done} {
		require.False(t, f.holds("1@dead", id), id)
	}
	require.True(t, f.holds("2@dead", f.otherDead))
}

func TestReleaseLimits(t *testing.T) {
	t.Parallel()
	f := newOpsReleaseFleet(t)
	code, out, stderr := run(t, f.env, "release", "--owner", "1@dead", "--yes", "--max-releases", "2", "--output", "json")
	require.Equal(t, exitcode.Guarded, code, stderr)
	var rep reaper.Report
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	// A task's lock and the resource holdings that inherit its verdict go
	// together (docs/verdicts.md): the cut falls between whole tasks (of 1,
	// 2 and 3 holdings), so 1 to 3 holdings of the first tasks in plan
	// order, never a part of one.
	require.Contains(t, []int{1, 2, 3}, rep.Summary.Released)
	require.Equal(t, "max-releases", rep.Guards[0].Name)
	for _, id := range []string{f.running, f.waiting, f.done} {
		if f.get("task:"+id) != "1@dead" {
			require.False(t, f.holds("1@dead", id), "task %s released in part", id)
		}
	}
}

func TestStdinIsTerminal(t *testing.T) {
	t.Parallel()
	require.False(t, stdinIsTerminal(nil))
	require.False(t, stdinIsTerminal(strings.NewReader("")))
	require.True(t, stdinIsTerminal(opsTerminal{}))
	for answer, want := range map[string]bool{"y\n": true, "YES\n": true, " y ": true, "n\n": false, "\n": false, "": false, "yep\n": false} {
		require.Equal(t, want, answeredYes(strings.NewReader(answer)), "%q", answer)
	}
	require.False(t, answeredYes(nil))
}

// A typo in --owner during an incident must not read as "released 0".
func TestReleaseUnknownOwnerNamesTheNearest(t *testing.T) {
	t.Parallel()
	f := newOpsReleaseFleet(t)
	code, out, stderr := run(t, f.env, "release", "--owner", "1@daed", "--yes")
	require.Equal(t, exitUnknownOwner, code, stderr)
	require.Empty(t, out)
	require.Contains(t, stderr, "owner 1@daed holds no lock and has no AppStatus row")
	require.Contains(t, stderr, "Nearest known owners: 1@dead, 2@dead")
	f.requireUntouched()

	code, out, stderr = run(t, f.env, "locks", "--owner", "1@daed")
	require.Equal(t, exitUnknownOwner, code, stderr)
	require.Empty(t, out)
	require.Contains(t, stderr, "lock-reaper locks: owner 1@daed holds no lock and has no AppStatus row")
	require.Contains(t, stderr, "Nearest known owners: 1@dead")
}

// A misspelt REAPER_* variable is a configuration error, never a default.
func TestUnknownReaperVariableIsAnError(t *testing.T) {
	t.Parallel()
	code, out, stderr := run(t, map[string]string{"REAPER_REDIS_ULR": "redis://127.0.0.1:1/0"}, "audit")
	require.Equal(t, exitcode.Usage, code)
	require.Empty(t, out)
	require.Contains(t, stderr, "unknown environment variable REAPER_REDIS_ULR (did you mean REAPER_REDIS_URL?)")
}

// A release that finds another pass holding the pass lock releases nothing
// and says so with exit 6: exit 0 would show a Job as Completed.
func TestReleaseWhilePassLockHeld(t *testing.T) {
	t.Parallel()
	f := newOpsReleaseFleet(t)
	conn, err := pgx.Connect(f.ctx, f.db.URL)
	require.NoError(t, err)
	defer conn.Close(f.ctx)
	_, err = conn.Exec(f.ctx, "SELECT pg_advisory_lock($1)", pulpdb.PassLockKey) // another lock-reaper's pass
	require.NoError(t, err)

	code, out, stderr := run(t, f.env, "release", "--owner", "1@dead", "--yes", "--output", "json")
	require.Equal(t, exitPassLockHeld, code, stderr)
	var rep reaper.Report
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	require.NotEmpty(t, rep.Skipped)
	require.Zero(t, rep.Summary.Released)
	require.Contains(t, stderr, "nothing was released")
	require.True(t, f.holds("1@dead", f.running))
	f.requireUntouched()

	_, err = conn.Exec(f.ctx, "SELECT pg_advisory_unlock($1)", pulpdb.PassLockKey)
	require.NoError(t, err)
	code, _, stderr = run(t, f.env, "release", "--owner", "1@dead", "--yes")
	require.Equal(t, exitcode.OK, code, stderr)
	require.False(t, f.holds("1@dead", f.running))

	_, help, _ := run(t, nil, "release", "-h")
	require.Contains(t, help, "6  another lock-reaper pass")
}
