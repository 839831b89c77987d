package reaper

import (
	"sort"
	"strings"
	"sync/atomic"
)

// reservedBy names, for one resource holding, the first kept task lock of
// its owner whose task reserves it and the first released one: positions
// among the task locks, in plan order. They are filled at once from parts
// of the task locks, so each keeps the least position any part offers.
type reservedBy struct{ kept, released atomic.Int32 }

func (r *reservedBy) get() (kept, released int32) {
	return r.kept.Load() - 1, r.released.Load() - 1
}

// offer records task lock n (stored as n+1, so that zero is none).
func (r *reservedBy) offer(n int32, released bool) {
	v := &r.kept
	if released {
		v = &r.released
	}
	for {
		old := v.Load()
		if old != 0 && old <= n+1 || v.CompareAndSwap(old, n+1) {
			return
		}
	}
}

// reservations finds, for each resource holding, the task locks of its
// owner whose task reserves it. The resource holdings are in key and owner
// order, so the holdings of one resource are consecutive: each reservation
// is looked up by its resource name, then by owner among that resource's
// holdings. The lookups run in parts at once.
func (j *judge) reservations(tasks, resources []int32, taskLocks []judgedTaskLock) []reservedBy {
	by := make([]reservedBy, len(resources))
	runs := resourceRuns(j.snap.Holdings, resources)
	inParallel(len(tasks), func(_, lo, hi int) {
		for n := lo; n < hi; n++ {
			tl := &taskLocks[n]
			owner := j.snap.Holdings[tl.at].Owner
			for _, entry := range j.snap.Tasks[j.snap.Holdings[tl.at].TaskID()].Reserved {
				r := parseReservation(entry)
				run, ok := runs[r.resource]
				if !ok {
					continue
				}
				ofOwner := resources[run.start:run.end]
				i := int(run.start) + sort.Search(len(ofOwner), func(i int) bool { return j.snap.Holdings[ofOwner[i]].Owner >= owner })
				for ; i < int(run.end) && j.snap.Holdings[resources[i]].Owner == owner; i++ {
					if j.snap.Holdings[resources[i]].Kind == r.kind {
						by[i].offer(int32(n), tl.released)
						break
					}
				}
			}
		}
	})
	shareWithDuplicates(j.snap.Holdings, resources, by)
	return by
}

// run is the positions [start, end) of one resource's holdings among the
// resource holdings.
type run struct{ start, end int32 }

// resourceRuns maps each resource name to its holdings among resources,
// which are in key order.
func resourceRuns(holdings []Holding, resources []int32) map[string]run {
	runs := make(map[string]run, len(resources))
	start, name := -1, ""
	end := func(i int) {
		if start >= 0 {
			runs[name] = run{int32(start), int32(i)}
		}
	}
	for i, at := range resources {
		next, ok := strings.CutPrefix(holdings[at].Key, ResourceKeyPrefix)
		switch {
		case !ok:
			end(i)
			start = -1
		case start < 0 || next != name:
			end(i)
			start, name = i, next
		}
	}
	end(len(resources))
	return runs
}

// shareWithDuplicates gives a holding that repeats an earlier one (same
// key, owner and kind: a snapshot built by hand may list one twice) what
// the first was offered. Offering each reservation to the first alone
// keeps the lookups linear however often a holding repeats.
func shareWithDuplicates(holdings []Holding, resources []int32, by []reservedBy) {
	var first map[Kind]int
	for i := range resources {
		x := &holdings[resources[i]]
		if i == 0 || compareKeyOwner(x, &holdings[resources[i-1]]) != 0 {
			clear(first)
			continue
		}
		if first == nil {
			first = map[Kind]int{}
		}
		if _, ok := first[holdings[resources[i-1]].Kind]; !ok {
			first[holdings[resources[i-1]].Kind] = i - 1
		}
		if f, ok := first[x.Kind]; ok {
			by[i].kept.Store(by[f].kept.Load())
			by[i].released.Store(by[f].released.Load())
		} else {
			first[x.Kind] = i
		}
	}
}
