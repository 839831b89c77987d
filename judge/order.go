package judge

import (
	"slices"
	"strings"
)

// SortHoldings puts holdings in the order every pass handles them in: task
// locks first, then by key and owner. A pass sorts the snapshot's holdings
// while it reads the database, so that the judge finds them in order.
func SortHoldings(hs []Holding) {
	if holdingsSorted(hs) {
		return
	}
	tasks, resources := sortedHoldings(hs)
	order := append(tasks, resources...)
	// Move each holding to its place along the cycles of the permutation:
	// hs[i] becomes the holding at order[i], and no copy of hs is made.
	for start := range order {
		if order[start] < 0 {
			continue
		}
		held, i := hs[start], start
		for {
			from := int(order[i])
			order[i] = -1
			if from == start {
				hs[i] = held
				break
			}
			hs[i], i = hs[from], from
		}
	}
}

func holdingsSorted(hs []Holding) bool {
	for i := 1; i < len(hs); i++ {
		if CompareHoldings(&hs[i-1], &hs[i]) > 0 {
			return false
		}
	}
	return true
}

// CompareHoldings orders holdings as SortHoldings does.
func CompareHoldings(a, b *Holding) int {
	if ta, tb := a.Kind == KindTask, b.Kind == KindTask; ta != tb {
		if ta {
			return -1
		}
		return 1
	}
	return compareKeyOwner(a, b)
}

func compareKeyOwner(a, b *Holding) int {
	if c := strings.Compare(a.Key, b.Key); c != 0 {
		return c
	}
	return strings.Compare(a.Owner, b.Owner)
}

// sortedHoldings returns the positions in hs of the task locks and of the
// resource holdings, each in the order of SortHoldings, whatever order
// Redis returned them in. Holdings already in order are only checked;
// otherwise their positions are sorted, leaving the holdings uncopied.
func sortedHoldings(hs []Holding) (tasks, resources []int32) {
	n := 0
	for i := range hs {
		if hs[i].Kind == KindTask {
			n++
		}
	}
	tasks, resources = make([]int32, 0, n), make([]int32, 0, len(hs)-n)
	for i := range hs {
		if hs[i].Kind == KindTask {
			tasks = append(tasks, int32(i))
		} else {
			resources = append(resources, int32(i))
		}
	}
	byKeyOwner := func(a, b int32) int { return compareKeyOwner(&hs[a], &hs[b]) }
	for _, positions := range [][]int32{tasks, resources} {
		if !slices.IsSortedFunc(positions, byKeyOwner) {
			slices.SortFunc(positions, byKeyOwner)
		}
	}
	return tasks, resources
}
