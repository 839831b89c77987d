package cli

import (
	"sort"

	"github.com/lock-reaper/lock-reaper/reaper"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
)

// orderKey is what the most-severe-first order reads of a row: a finding
// of audit, a holding of locks.
type orderKey struct {
	owner     string
	verdict   judge.Verdict
	taskState string
	task      string
	kind      judge.Kind
}

// mostSevereFirst sorts rows as a terminal lists them, the order audit's
// findings have always had there: an owner's rows stay together, the owner
// with the most severe verdict first, then the one with more rows, then by
// name; within an owner the most severe verdict first; within a verdict a
// running task's holdings first (it is what keeps other tasks waiting), a
// task's holdings together, its task lock first. Rows equal in all of that
// keep their order.
func mostSevereFirst[T any](rows []T, key func(*T) orderKey) {
	worst, count := map[string]int{}, map[string]int{}
	for i := range rows {
		k := key(&rows[i])
		if s, ok := worst[k.owner]; !ok || severityOf(k.verdict) < s {
			worst[k.owner] = severityOf(k.verdict)
		}
		count[k.owner]++
	}
	sort.SliceStable(rows, func(a, b int) bool {
		ka, kb := key(&rows[a]), key(&rows[b])
		switch {
		case ka.owner != kb.owner && worst[ka.owner] != worst[kb.owner]:
			return worst[ka.owner] < worst[kb.owner]
		case ka.owner != kb.owner && count[ka.owner] != count[kb.owner]:
			return count[ka.owner] > count[kb.owner]
		case ka.owner != kb.owner:
			return ka.owner < kb.owner
		case ka.verdict != kb.verdict:
			return severityOf(ka.verdict) < severityOf(kb.verdict)
		case stateRank(ka.taskState) != stateRank(kb.taskState):
			return stateRank(ka.taskState) < stateRank(kb.taskState)
		case ka.task != kb.task:
			return ka.task < kb.task
		}
		return kindRank(ka.kind) < kindRank(kb.kind)
	})
}

// severeOrder is the indexes of n rows in the order of mostSevereFirst,
// key(i) being row i's place: a long list (an incident's hundreds of
// thousands of findings) is read in that order without a copy of its rows.
func severeOrder(n int, key func(i int) orderKey) []int {
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	mostSevereFirst(order, func(i *int) orderKey { return key(*i) })
	return order
}

// findingOrder is a finding's place in mostSevereFirst.
func findingOrder(f *reaper.Finding) orderKey {
	return orderKey{owner: f.Owner, verdict: f.Verdict, taskState: f.Evidence().TaskState, task: findingTask(*f), kind: f.Kind}
}

// lockOrder is a holding's place in mostSevereFirst, as its finding's.
func lockOrder(l *LockLine) orderKey {
	return orderKey{owner: l.Owner, verdict: l.Verdict, taskState: l.TaskState, task: l.TaskID, kind: l.Kind}
}

// stateRank puts holdings of running tasks first, then of waiting ones,
// then those of no task row, then of finished tasks.
func stateRank(state string) int {
	switch state {
	case "running", "canceling":
		return 0
	case "waiting":
		return 1
	case "":
		return 2
	}
	return 3
}

func kindRank(k judge.Kind) int {
	switch k {
	case judge.KindTask:
		return 0
	case judge.KindExclusive:
		return 1
	}
	return 2
}

// ownersMostSevereFirst sorts locks --by-owner's owners as mostSevereFirst
// sorts their holdings: the most severe verdict first, then the owner with
// more holdings, then by name.
func ownersMostSevereFirst(owners []OwnerCounts) {
	worst := func(c OwnerCounts) int {
		w := len(judge.Verdicts) + 1
		for v := range c.ByVerdict {
			w = min(w, severityOf(v))
		}
		return w
	}
	sort.SliceStable(owners, func(a, b int) bool {
		oa, ob := owners[a], owners[b]
		if wa, wb := worst(oa), worst(ob); wa != wb {
			return wa < wb
		}
		if oa.Holdings != ob.Holdings {
			return oa.Holdings > ob.Holdings
		}
		return oa.Owner < ob.Owner
	})
}
