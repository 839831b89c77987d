package status

import "time"

// BlockedTasks is what the overview says first: how many waiting tasks a
// stale or suspect lock blocks (Queued.Blocked), and the one of them that
// has waited longest. The page's headline, its "Oldest blocked wait" and the
// gauges lock_reaper_blocked_tasks and lock_reaper_oldest_blocked_wait_seconds
// are all taken from blockedOf, so that the page and a dashboard cannot
// disagree.
type BlockedTasks struct {
	Count int
	// Oldest is the blocked task that has waited longest, the first in
	// fetch order among equals; nil when none is blocked.
	Oldest *Queued
}

// OldestWait is how long the oldest blocked task has waited, on the
// database clock of the snapshot; 0 when none is blocked.
func (b BlockedTasks) OldestWait() time.Duration {
	if b.Oldest == nil {
		return 0
	}
	return b.Oldest.Wait
}

// blockedOf counts the blocked tasks of a queue and finds the one that has
// waited longest. It reads nothing but the queue: the queue is bounded
// (Options.MaxWaiting), so are the count and the work.
func blockedOf(queue []Queued) BlockedTasks {
	var b BlockedTasks
	for i := range queue {
		q := &queue[i]
		if !q.Blocked() {
			continue
		}
		b.Count++
		if b.Oldest == nil || q.Wait > b.Oldest.Wait {
			b.Oldest = q
		}
	}
	return b
}

// BlockedTasks is the view's blocked tasks (blockedOf of its queue).
func (v *View) BlockedTasks() BlockedTasks { return blockedOf(v.Queue) }
