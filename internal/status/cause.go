package status

import (
	"html/template"
	"sort"

	"github.com/lock-reaper/lock-reaper/reaper/judge"
)

// Cause is one reason waiting tasks wait: the owner of the first lock in
// their way, with every task it holds up. In an incident one dead worker
// blocks a hundred tasks; the pages say so once, under the cause, instead
// of once per task.
type Cause struct {
	// Owner holds the lock.
	Owner string
	// Verdicts count the tasks by the verdict of the lock in their way, most
	// tasks first.
	Verdicts []VerdictCount
	// None says no lock holds these tasks up: they are ready, or behind
	// older tasks only.
	None bool
	// Blocked says the lock is stale or suspect and no pass has released it
	// yet: a pass will free these tasks.
	Blocked bool
	// Lead is the first task's link to the owner: its liveness, heartbeat,
	// pod and when it will be freed, which the group shows once.
	Lead Link
	// Tasks are the tasks held up, in Pulp's fetch order.
	Tasks []*Queued
	// Holdings and Stale count the owner's holdings in the snapshot, and
	// those a pass releases or confirms (filled by View.causes).
	Holdings, Stale int
}

// Query is the blocked queue's query string that shows this cause alone.
func (c Cause) Query() template.URL {
	if c.None {
		return query("lock", "none")
	}
	blocked := ""
	if c.Blocked {
		blocked = "1"
	}
	return query("owner", c.Owner, "blocked", blocked)
}

// leadOf is the link a task is grouped by: its first stale or suspect lock
// not yet released when it is blocked, else the first lock in its way.
func leadOf(q *Queued) (Link, bool) {
	if q.Blocked() {
		for _, l := range q.Chain {
			if !l.Released && l.Holder.Action != judge.ActionKeep {
				return l, true
			}
		}
	}
	if len(q.Chain) > 0 {
		return q.Chain[0], false
	}
	return Link{}, false
}

// causesOf groups a queue by cause. The blocking causes come first, the
// one holding up most tasks first; then the live holders and the released
// locks, the same way; the tasks no lock holds up come last. Ties go to the
// cause whose first task Pulp fetches first. Within a cause the tasks keep
// the queue's order.
func causesOf(queue []Queued) []Cause {
	type key struct {
		owner         string
		blocked, none bool
	}
	var out []Cause
	at := map[key]int{}
	for i := range queue {
		q := &queue[i]
		lead, blocked := leadOf(q)
		k := key{owner: lead.Holder.Owner, blocked: blocked, none: len(q.Chain) == 0}
		n, ok := at[k]
		if !ok {
			n = len(out)
			at[k] = n
			out = append(out, Cause{Owner: k.owner, Blocked: blocked, None: k.none, Lead: lead})
		}
		c := &out[n]
		c.Tasks = append(c.Tasks, q)
		if !c.None {
			c.countVerdict(lead.Holder.Verdict)
		}
	}
	rank := func(c Cause) int {
		switch {
		case c.Blocked:
			return 0
		case c.None:
			return 2
		}
		return 1
	}
	sort.SliceStable(out, func(a, b int) bool {
		ca, cb := out[a], out[b]
		if ra, rb := rank(ca), rank(cb); ra != rb {
			return ra < rb
		}
		if len(ca.Tasks) != len(cb.Tasks) {
			return len(ca.Tasks) > len(cb.Tasks)
		}
		return ca.Tasks[0].Position < cb.Tasks[0].Position
	})
	return out
}

// countVerdict counts one more task held up by a lock of verdict v, keeping
// the counts most tasks first (ties in order of appearance).
func (c *Cause) countVerdict(v judge.Verdict) {
	i := 0
	for i < len(c.Verdicts) && c.Verdicts[i].Verdict != v {
		i++
	}
	if i == len(c.Verdicts) {
		c.Verdicts = append(c.Verdicts, VerdictCount{Verdict: v})
	}
	c.Verdicts[i].Count++
	for i > 0 && c.Verdicts[i-1].Count < c.Verdicts[i].Count {
		c.Verdicts[i-1], c.Verdicts[i] = c.Verdicts[i], c.Verdicts[i-1]
		i--
	}
}

// causes groups the view's queue by cause, with each owner's counts.
func (v *View) causes() []Cause {
	out := causesOf(v.Queue)
	for i := range out {
		if o, ok := v.Owner(out[i].Owner); ok {
			out[i].Holdings, out[i].Stale = o.Holdings, o.Stale
		}
	}
	return out
}

// BlockingCauses are the causes a pass will end, for the overview.
func (v *View) BlockingCauses() []Cause {
	var out []Cause
	for _, c := range v.Causes {
		if c.Blocked {
			out = append(out, c)
		}
	}
	return out
}

// causeFilter picks causes out of the blocked queue's query string:
// ?blocked=1 keeps the blocking ones, ?owner=O those of an owner, ?lock=none
// the tasks no lock holds up.
type causeFilter struct {
	Owner         string
	Blocked, None bool
}

// focused says the filter narrows the queue to one owner's causes, or to
// the tasks no lock holds up: the page then lists all their tasks.
func (f causeFilter) focused() bool { return f.Owner != "" || f.None }

func (f causeFilter) match(c Cause) bool {
	return (!f.Blocked || c.Blocked) && (!f.None || c.None) && (f.Owner == "" || c.Owner == f.Owner && !c.None)
}
