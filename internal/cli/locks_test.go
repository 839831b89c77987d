package cli

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/internal/exitcode"
	"github.com/lock-reaper/lock-reaper/internal/testing/passtest"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
	"github.com/lock-reaper/lock-reaper/reaper/redislocks"
)

// opsLocksFleet is a dead worker with a lost task and a leaked finished one,
// a live worker with a healthy task, and a lock no task justifies.
type opsLocksFleet struct {
	*opsFleet
	repoDead, repoDone, repoLive, stray string
	lost, done, healthy                 string
}

func newOpsLocksFleet(t *testing.T) *opsLocksFleet {
	f := &opsLocksFleet{opsFleet: newOpsFleet(t), repoDead: passtest.Repo(), repoDone: passtest.Repo(), repoLive: passtest.Repo(), stray: passtest.Repo()}
	dead := f.worker("1@dead", time.Hour)
	live := f.worker("1@live", 0)
	f.lost = f.task("running", dead, []string{f.repoDead, "shared:" + passtest.Domain}, time.Hour)
	f.acquire("1@dead", f.lost, f.repoDead, "shared:"+passtest.Domain)
	f.done = f.task("completed", dead, []string{f.repoDone}, 2*time.Hour)
	f.acquire("1@dead", f.done, f.repoDone)
	f.healthy = f.task("running", live, []string{f.repoLive, "shared:" + passtest.Domain}, time.Minute)
	f.acquire("1@live", f.healthy, f.repoLive, "shared:"+passtest.Domain)
	require.NoError(t, f.r.Client.Set(f.ctx, "pulp:resource_lock:"+f.stray, "1@live", 0).Err())
	return f
}

func (f *opsLocksFleet) lines(args ...string) []LockLine {
	f.t.Helper()
	code, out, stderr := run(f.t, f.env, append([]string{"locks", "--output", "json"}, args...)...)
	require.Equal(f.t, exitcode.OK, code, stderr)
	var lo LocksOutput
	require.NoError(f.t, json.Unmarshal([]byte(out), &lo), out)
	require.False(f.t, lo.DBNow.IsZero())
	require.NotNil(f.t, lo.Holdings, "an empty list prints as []")
	return lo.Holdings
}

func opsKeysOf(lines []LockLine) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = l.Key + " " + l.Owner
	}
	return out
}

func TestLocks(t *testing.T) {
	t.Parallel()
	f := newOpsLocksFleet(t)
	rk := func(r string) string { return "pulp:resource_lock:" + r }

	all := f.lines()
	require.Len(t, all, 9)
	byKey := map[string]LockLine{}
	for _, l := range all {
		byKey[l.Key+" "+l.Owner] = l
	}
	lost := byKey["task:"+f.lost+" 1@dead"]
	require.Equal(t, judge.KindTask, lost.Kind)
	require.Equal(t, "dead", lost.OwnerLiveness)
	require.NotNil(t, lost.HeartbeatAge)
	require.InDelta(t, time.Hour.Seconds(), time.Duration(*lost.HeartbeatAge).Seconds(), 60)
	require.Equal(t, f.lost, lost.TaskID)
	require.Equal(t, "running", lost.TaskState)
	require.Equal(t, judge.VerdictOwnerDead, lost.Verdict)
	require.Equal(t, judge.ActionRelease, lost.Action)
	domain := byKey[rk(passtest.Domain)+" 1@live"]
	require.Equal(t, judge.KindShared, domain.Kind)
	require.Equal(t, f.healthy, domain.TaskID, "a resource holding names the task its task lock reserves it for")
	require.Equal(t, judge.VerdictJustified, domain.Verdict)
	stray := byKey[rk(f.stray)+" 1@live"]
	require.Empty(t, stray.TaskID)
	require.Equal(t, judge.VerdictNoTask, stray.Verdict)
	require.Equal(t, judge.ActionSuspect, stray.Action)

	require.ElementsMatch(t, []string{
		rk(f.repoDead) + " 1@dead", rk(f.repoDone) + " 1@dead", rk(passtest.Domain) + " 1@dead",
		"task:" + f.done + " 1@dead", "task:" + f.lost + " 1@dead",
	}, opsKeysOf(f.lines("--owner", "1@dead")))
	require.ElementsMatch(t, []string{rk(passtest.Domain) + " 1@dead", rk(passtest.Domain) + " 1@live"}, opsKeysOf(f.lines("--resource", passtest.Domain)))
	require.ElementsMatch(t, []string{rk(f.repoDone) + " 1@dead", "task:" + f.done + " 1@dead"}, opsKeysOf(f.lines("--verdict", "task-finished")))
	require.ElementsMatch(t, []string{rk(f.repoLive) + " 1@live", rk(passtest.Domain) + " 1@live", "task:" + f.healthy + " 1@live"},
		opsKeysOf(f.lines("--task", strings.ToUpper(f.healthy))))
	require.ElementsMatch(t, []string{rk(passtest.Domain) + " 1@dead"}, opsKeysOf(f.lines("--owner", "1@dead", "--resource", passtest.Domain, "--verdict", "owner-dead")))
	code, _, stderr := run(t, f.env, "locks", "--owner", "7@nobody", "--output", "json")
	require.Equal(t, exitUnknownOwner, code)
	require.Contains(t, stderr, "owner 7@nobody holds no lock and has no AppStatus row")

	_, err := f.r.Client.Get(f.ctx, redislocks.SuspectsKey).Result()
	require.Error(t, err, "locks writes nothing, not even suspects")
	require.Equal(t, "1@dead", f.get("task:"+f.lost))
	state, _ := f.state(f.lost)
	require.Equal(t, "running", state)
}

func TestLocksByOwner(t *testing.T) {
	t.Parallel()
	f := newOpsLocksFleet(t)
	code, out, stderr := run(t, f.env, "locks", "--by-owner", "--output", "json")
	require.Equal(t, exitcode.OK, code, stderr)
	var bo LocksByOwnerOutput
	require.NoError(t, json.Unmarshal([]byte(out), &bo), out)
	require.Len(t, bo.Owners, 2)
	dead, live := bo.Owners[0], bo.Owners[1]
	require.Equal(t, "1@dead", dead.Owner)
	require.Equal(t, "dead", dead.OwnerLiveness)
	require.Equal(t, 5, dead.Holdings)
	require.Equal(t, map[judge.Kind]int{judge.KindTask: 2, judge.KindExclusive: 2, judge.KindShared: 1}, dead.ByKind)
	require.Equal(t, map[judge.Verdict]int{judge.VerdictOwnerDead: 3, judge.VerdictTaskFinished: 2}, dead.ByVerdict)
	require.Equal(t, "1@live", live.Owner)
	require.Equal(t, "alive", live.OwnerLiveness)
	require.Equal(t, map[judge.Verdict]int{judge.VerdictHealthy: 1, judge.VerdictJustified: 2, judge.VerdictNoTask: 1}, live.ByVerdict)

	// Filters apply before counting.
	code, out, _ = run(t, f.env, "locks", "--by-owner", "--verdict", "no-task", "--output", "json")
	require.Equal(t, exitcode.OK, code)
	require.NoError(t, json.Unmarshal([]byte(out), &bo))
	require.Len(t, bo.Owners, 1)
	require.Equal(t, 1, bo.Owners[0].Holdings)

	code, out, _ = run(t, f.env, "locks", "--by-owner", "--owner", "7@nobody", "--output", "json")
	require.Equal(t, exitUnknownOwner, code)
	require.Empty(t, out)

	code, out, _ = run(t, f.env, "locks", "--by-owner")
	require.Equal(t, exitcode.OK, code)
	require.Contains(t, out, "OWNER")
	require.Contains(t, out, "owner-dead 3, task-finished 2")
	require.Contains(t, out, "2 owners at ")
}

func TestLocksText(t *testing.T) {
	t.Parallel()
	f := newOpsLocksFleet(t)
	code, out, stderr := run(t, f.env, "locks", "--owner", "1@dead", "--verdict", "owner-dead")
	require.Equal(t, exitcode.OK, code, stderr)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 5, out)
	require.True(t, strings.HasPrefix(lines[0], "KEY "), out)
	require.Contains(t, out, "task:"+f.lost)
	require.Contains(t, out, f.lost+" (running)")
	require.Contains(t, out, "dead, heartbeat 1h")
	require.True(t, strings.HasPrefix(lines[4], "3 holdings at "), out)

	code, _, stderr = run(t, f.env, "locks", "--verdict", "stale")
	require.Equal(t, exitcode.Usage, code)
	require.Contains(t, stderr, "--verdict must be one of")
	code, _, _ = run(t, f.env, "locks", "extra")
	require.Equal(t, exitcode.Usage, code)
}

// locks lists the most severe first, as audit lists its findings, on a
// terminal and piped alike: a dead worker's holdings before a live one's
// whatever their names and keys, and --by-owner the dead owner first; JSON
// keeps the pass's order (--by-owner, by name).
func TestLocksMostSevereFirst(t *testing.T) {
	t.Parallel()
	f := newOpsFleet(t)
	dead, live := f.worker("9@dead", time.Hour), f.worker("1@live", 0)
	for range 3 {
		repo := passtest.Repo()
		f.acquire("1@live", f.task("running", live, []string{repo}, time.Minute), repo)
	}
	repo := passtest.Repo()
	lost := f.task("running", dead, []string{repo}, time.Hour)
	f.acquire("9@dead", lost, repo)

	code, shown, stderr := onTerminal(t, f.env, 250, "", "locks")
	require.Equal(t, exitcode.OK, code, stderr)
	rows := locksRows(stripANSI(shown))
	require.Len(t, rows, 8, shown)
	for i, r := range rows {
		owner := "1@live"
		if i < 2 {
			owner = "9@dead"
		}
		require.Contains(t, r, " "+owner+" ", "row %d:\n%s", i, shown)
	}
	require.True(t, strings.HasPrefix(rows[0], "task:"+lost), "the task lock first:\n%s", shown)
	holdings := rows

	_, shown, _ = onTerminal(t, f.env, 250, "", "locks", "--by-owner")
	rows = locksRows(stripANSI(shown))
	require.Len(t, rows, 2, shown)
	require.True(t, strings.HasPrefix(rows[0], "9@dead "), shown)

	// Piped, one complete row per holding in the same order.
	_, out, _ := run(t, f.env, "locks")
	piped := locksRows(out)
	require.Len(t, piped, 8, out)
	for i, r := range piped {
		require.Equal(t, strings.Fields(holdings[i])[0], strings.Fields(r)[0], "row %d piped as on a terminal:\n%s", i, out)
	}
	_, out, _ = run(t, f.env, "locks", "--by-owner")
	require.True(t, strings.HasPrefix(locksRows(out)[0], "9@dead "), "piped: the dead owner first:\n%s", out)

	_, out, _ = run(t, f.env, "locks", "--by-owner", "--output", "json")
	var byOwner LocksByOwnerOutput
	require.NoError(t, json.Unmarshal([]byte(out), &byOwner), out)
	require.Equal(t, "1@live", byOwner.Owners[0].Owner, "JSON: by name")
}

// locksRows are the lines of a locks table between its header and its
// closing count.
func locksRows(text string) []string {
	lines := strings.Split(strings.TrimSpace(text), "\n")
	if len(lines) < 2 {
		return nil
	}
	return lines[1 : len(lines)-1]
}
