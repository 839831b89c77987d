package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"time"

	"github.com/lock-reaper/lock-reaper/internal/config"
	"github.com/lock-reaper/lock-reaper/internal/status"
	"github.com/lock-reaper/lock-reaper/reaper"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
)

// queueCauses is what the status page says first about the waiting tasks:
// how many are blocked, and by locks of which verdict, counted over the
// blocking causes (status.View.BlockingCauses) as the page's headline
// counts them.
type queueCauses struct {
	waiting, blocked int
	// byVerdict counts the blocked tasks by the verdict of the lock in
	// their way, most tasks first.
	byVerdict []status.VerdictCount
}

// queueCausesOf reads the counts from a view of the status page.
func queueCausesOf(v *status.View) queueCauses {
	q := queueCauses{waiting: v.QueueTotal, blocked: v.Blocked}
	at := map[judge.Verdict]int{}
	for _, c := range v.BlockingCauses() {
		for _, n := range c.Verdicts {
			i, ok := at[n.Verdict]
			if !ok {
				i = len(q.byVerdict)
				at[n.Verdict] = i
				q.byVerdict = append(q.byVerdict, status.VerdictCount{Verdict: n.Verdict})
			}
			q.byVerdict[i].Count += n.Count
		}
	}
	sort.SliceStable(q.byVerdict, func(a, b int) bool { return q.byVerdict[a].Count > q.byVerdict[b].Count })
	return q
}

// pageCauses builds the status page's view of the demo's services, as
// `lock-reaper status` would on them, and returns what it says first: the
// demo's words come from the same analysis as the page, not from what the
// incident was built to be.
func (d *demo) pageCauses(ctx context.Context) (queueCauses, error) {
	r, err := reaper.New(config.Default().Pass, d.rdb, d.pool, slog.New(slog.DiscardHandler))
	if err != nil {
		return queueCauses{}, err
	}
	start := time.Now()
	in, err := r.Inspect(ctx, reaper.InspectOptions{})
	if err != nil {
		return queueCauses{}, err
	}
	pages := status.New(r, status.Options{QueueOnly: true})
	pages.Publish(ctx, in, time.Since(start), time.Time{})
	v := pages.View()
	if v == nil {
		return queueCauses{}, errors.New("no view of the queue")
	}
	if v.QueueError != "" {
		return queueCauses{}, errors.New(v.QueueError)
	}
	return queueCausesOf(v), nil
}

// lockWords say, after "wait on", whose locks a verdict's are.
var lockWords = map[judge.Verdict]string{
	judge.VerdictTaskFinished: "locks of finished tasks",
	judge.VerdictOwnerDead:    "a dead worker's locks",
	judge.VerdictOwnerGone:    "locks of owners gone from the worker list",
	judge.VerdictTaskMissing:  "locks of tasks that no longer exist",
	judge.VerdictTaskLost:     "locks of lost tasks",
	judge.VerdictUnclaimed:    "locks of tasks no worker claims",
	judge.VerdictNoTask:       "locks held for no task",
	judge.VerdictPending:      "suspect locks awaiting confirmation",
}

func lockWordsOf(v judge.Verdict) string {
	if w, ok := lockWords[v]; ok {
		return w
	}
	return v.String() + " locks"
}

// whyWords say why a verdict's locks are stale, for the verdicts the
// demo's incident has.
var whyWords = map[judge.Verdict]string{
	judge.VerdictTaskFinished: "Locks of finished tasks (task-finished) are leftovers: the worker finished those tasks long\n" +
		"ago but never released their locks, and no one else releases a lock in Pulp, so a queued task\n" +
		"that needs the same repository waits forever. A pass releases them because their task is over.",
	judge.VerdictOwnerDead: "A dead worker's locks (owner-dead) are those of the tasks that were running when it died.\n" +
		"A pass releases them because their owner is gone, and cancels the tasks.",
}

// headline is the page's first answer in a sentence: how many of the
// waiting tasks are blocked, and by whose locks, most tasks first, e.g.
// "83 of 101 blocked tasks wait on locks of finished tasks, 18 on a dead
// worker's locks".
func (q queueCauses) headline() string {
	if q.blocked == 0 {
		return fmt.Sprintf("none of the %d waiting tasks is blocked by a stale or suspect lock", q.waiting)
	}
	if len(q.byVerdict) == 1 && q.byVerdict[0].Count == q.blocked {
		return fmt.Sprintf("all %d blocked tasks wait on %s", q.blocked, lockWordsOf(q.byVerdict[0].Verdict))
	}
	parts := make([]string, 0, len(q.byVerdict))
	for i, n := range q.byVerdict {
		if i == 0 {
			parts = append(parts, fmt.Sprintf("%d of %d blocked tasks wait on %s", n.Count, q.blocked, lockWordsOf(n.Verdict)))
			continue
		}
		parts = append(parts, fmt.Sprintf("%d on %s", n.Count, lockWordsOf(n.Verdict)))
	}
	return strings.Join(parts, ", ")
}

// paragraph is what the demo says after the audit: the page's counts, then
// why each verdict in the way is stale, the one blocking most tasks first.
func (q queueCauses) paragraph() string {
	var b strings.Builder
	fmt.Fprintf(&b, "What blocks the queue, as the status page reads it: %d of %d waiting tasks are blocked;\n%s.\n",
		q.blocked, q.waiting, q.headline())
	for _, n := range q.byVerdict {
		if w, ok := whyWords[n.Verdict]; ok {
			fmt.Fprintf(&b, "%s\n", w)
		}
	}
	return b.String()
}
