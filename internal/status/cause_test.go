package status

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/lock-reaper/lock-reaper/internal/explain"
	"github.com/lock-reaper/lock-reaper/reaper"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
)

// TestCausesOf groups waiting tasks by the owner of the first lock in their
// way: the blocking causes first, the one holding up most tasks first, then
// the live and released holders, then the tasks no lock holds up; each
// cause's tasks in fetch order, its verdicts counted most tasks first.
func TestCausesOf(t *testing.T) {
	stale := func(owner string, v judge.Verdict) Link {
		return Link{Holder: explain.Holder{HoldingRef: reaper.HoldingRef{Owner: owner}, HoldingVerdict: reaper.HoldingVerdict{Verdict: v, Action: judge.ActionRelease}}}
	}
	suspect := func(owner string) Link {
		return Link{Holder: explain.Holder{HoldingRef: reaper.HoldingRef{Owner: owner}, HoldingVerdict: reaper.HoldingVerdict{Verdict: judge.VerdictNoTask, Action: judge.ActionSuspect}}}
	}
	kept := func(owner string) Link {
		return Link{Holder: explain.Holder{HoldingRef: reaper.HoldingRef{Owner: owner}, HoldingVerdict: reaper.HoldingVerdict{Verdict: judge.VerdictJustified, Action: judge.ActionKeep}}}
	}
	released := func(owner string) Link {
		l := stale(owner, judge.VerdictOwnerDead)
		l.Released = true
		return l
	}
	task := func(pos int, status explain.Status, chain ...Link) Queued {
		return Queued{Position: pos, Explanation: explain.Explanation{Status: status}, Chain: chain}
	}
	blocked := explain.StatusBlocked
	type group struct {
		owner    string
		blocked  bool
		none     bool
		tasks    []int
		verdicts []VerdictCount
	}
	dead, late, live := "1@dead", "1@late", "1@live"
	for _, tc := range []struct {
		name  string
		queue []Queued
		want  []group
	}{
		{name: "an empty queue has no cause"},
		{
			name:  "one dead worker blocks every task, under two verdicts",
			queue: []Queued{task(1, blocked, stale(dead, judge.VerdictTaskFinished)), task(2, blocked, stale(dead, judge.VerdictOwnerDead)), task(3, blocked, stale(dead, judge.VerdictOwnerDead))},
			want: []group{{owner: dead, blocked: true, tasks: []int{1, 2, 3},
				verdicts: []VerdictCount{{judge.VerdictOwnerDead, 2}, {judge.VerdictTaskFinished, 1}}}},
		},
		{
			name: "the cause blocking most tasks leads, ready tasks come last",
			queue: []Queued{
				task(1, explain.StatusReady),
				task(2, blocked, suspect(late)),
				task(3, blocked, stale(dead, judge.VerdictOwnerDead)),
				task(4, explain.StatusWaiting, kept(live)),
				task(5, blocked, stale(dead, judge.VerdictOwnerDead)),
			},
			want: []group{
				{owner: dead, blocked: true, tasks: []int{3, 5}, verdicts: []VerdictCount{{judge.VerdictOwnerDead, 2}}},
				{owner: late, blocked: true, tasks: []int{2}, verdicts: []VerdictCount{{judge.VerdictNoTask, 1}}},
				{owner: live, tasks: []int{4}, verdicts: []VerdictCount{{judge.VerdictJustified, 1}}},
				{none: true, tasks: []int{1}},
			},
		},
		{
			name:  "equal counts go in fetch order",
			queue: []Queued{task(1, blocked, suspect(late)), task(2, blocked, stale(dead, judge.VerdictOwnerDead))},
			want: []group{
				{owner: late, blocked: true, tasks: []int{1}, verdicts: []VerdictCount{{judge.VerdictNoTask, 1}}},
				{owner: dead, blocked: true, tasks: []int{2}, verdicts: []VerdictCount{{judge.VerdictOwnerDead, 1}}},
			},
		},
		{
			name: "a task is grouped by its first stale lock, not a live one before it",
			queue: []Queued{
				task(1, blocked, kept(live), stale(dead, judge.VerdictOwnerDead)),
				task(2, explain.StatusWaiting, kept(live), stale(dead, judge.VerdictOwnerDead)),
			},
			want: []group{
				{owner: dead, blocked: true, tasks: []int{1}, verdicts: []VerdictCount{{judge.VerdictOwnerDead, 1}}},
				// Explained as waiting (on the live worker first), so not blocked.
				{owner: live, tasks: []int{2}, verdicts: []VerdictCount{{judge.VerdictJustified, 1}}},
			},
		},
		{
			name:  "a lock the last pass released no longer blocks: its own cause",
			queue: []Queued{task(1, blocked, released(dead)), task(2, blocked, stale(dead, judge.VerdictOwnerDead))},
			want: []group{
				{owner: dead, blocked: true, tasks: []int{2}, verdicts: []VerdictCount{{judge.VerdictOwnerDead, 1}}},
				{owner: dead, tasks: []int{1}, verdicts: []VerdictCount{{judge.VerdictOwnerDead, 1}}},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []group
			for _, c := range causesOf(tc.queue) {
				g := group{owner: c.Owner, blocked: c.Blocked, none: c.None, verdicts: c.Verdicts}
				for _, q := range c.Tasks {
					g.tasks = append(g.tasks, q.Position)
				}
				got = append(got, g)
			}
			assert.Equal(t, tc.want, got)
		})
	}
}

// TestCauseFilter: the blocked queue's query string picks causes.
func TestCauseFilter(t *testing.T) {
	deadBlocks := Cause{Owner: "1@dead", Blocked: true}
	liveKeeps := Cause{Owner: "1@live"}
	none := Cause{None: true}
	for _, tc := range []struct {
		f    causeFilter
		want []bool
	}{
		{causeFilter{}, []bool{true, true, true}},
		{causeFilter{Blocked: true}, []bool{true, false, false}},
		{causeFilter{Owner: "1@live"}, []bool{false, true, false}},
		{causeFilter{Owner: "1@live", Blocked: true}, []bool{false, false, false}},
		{causeFilter{None: true}, []bool{false, false, true}},
	} {
		got := []bool{tc.f.match(deadBlocks), tc.f.match(liveKeeps), tc.f.match(none)}
		assert.Equal(t, tc.want, got, "%+v", tc.f)
	}
	assert.Equal(t, "blocked=1&owner=1%40dead", string(deadBlocks.Query()))
	assert.Equal(t, "lock=none", string(none.Query()))
}
