package reaper

import (
	"maps"
	"runtime"
	"sync"

	"github.com/lock-reaper/lock-reaper/heartbeat"
)

// judgedTaskLock is what judging the resource holdings and the lost tasks
// needs of a judged task lock, without keeping a judgement of every one.
type judgedTaskLock struct {
	// at is the task lock's position in the snapshot's holdings.
	at       int32
	released bool
	missing  bool
}

// part is what one part of the holdings, judged apart from the others,
// adds to the plan.
type part struct {
	// listed are the part's items whose judgement the plan lists.
	listed    []int32
	suspects  map[SuspectKey]Suspect
	byVerdict map[Verdict]int
	byOwner   map[string]int
}

func newPart() *part {
	return &part{suspects: map[SuspectKey]Suspect{}, byVerdict: map[Verdict]int{}, byOwner: map[string]int{}}
}

// add counts the judgement of item n and notes whether the plan lists it.
// A plan that lists every holding gets the judgement at once, in all[n].
func (j *judge) add(pt *part, all []Judgement, n int, jd Judgement) {
	pt.byVerdict[jd.Verdict]++
	pt.byOwner[jd.Owner]++
	switch {
	case all != nil:
		all[n] = jd
	case jd.Verdict.finding():
		pt.listed = append(pt.listed, int32(n))
	}
}

// judgeParts bounds how many goroutines judge the holdings of one snapshot
// at once, and judgePartMin how few holdings make a part worth one.
const (
	judgeParts   = 4
	judgePartMin = 8192
)

// inParts calls fn on consecutive parts of [0, n) at once, when n is large
// enough to be worth it and more than one CPU can run them. Each part gets a
// judge of its own (its own cache of owner evidence) and a part of its own
// for what it counts and remembers, added to the plan's afterwards: the
// holdings of a snapshot are judged independently of one another, so the
// plan is the same as from one part. It returns the items listed, in order.
func (j *judge) inParts(n int, plan *Plan, counts *part, fn func(w *judge, pt *part, lo, hi int)) []int32 {
	var listed []int32
	for _, piece := range j.parallel(n, func(w *judge, lo, hi int) *part {
		pt := newPart()
		fn(w, pt, lo, hi)
		return pt
	}) {
		listed = append(listed, piece.listed...)
		maps.Copy(plan.Suspects, piece.suspects)
		for v, c := range piece.byVerdict {
			counts.byVerdict[v] += c
		}
		for o, c := range piece.byOwner {
			counts.byOwner[o] += c
		}
	}
	return listed
}

// parallel calls fn on consecutive parts of [0, n) at once, each part with
// a judge of its own (its own cache of owner evidence), and returns what each
// returned, in order. One part is judged by j itself.
func (j *judge) parallel(n int, fn func(w *judge, lo, hi int) *part) []*part {
	pieces := make([]*part, partsOf(n))
	if len(pieces) > 1 {
		j.liveness(heartbeat.Gone) // fill the shared pointers before sharing them
	}
	inParallel(n, func(p, lo, hi int) {
		w := j
		if len(pieces) > 1 {
			own := *j
			own.evidence = nil
			w = &own
		}
		pieces[p] = fn(w, lo, hi)
	})
	return pieces
}

// fill writes the judgement of each listed item into out, judging them
// again, in parts at once. A plan that lists only the findings is judged
// twice, so: first to count every holding and find the few to list, then to
// list those in a slice of their exact size, where collecting the
// judgements of parts would copy them twice over.
func (j *judge) fill(out []Judgement, items []int32, judgeItem func(w *judge, n int, suspects map[SuspectKey]Suspect) Judgement) {
	j.parallel(len(items), func(w *judge, lo, hi int) *part {
		scratch := map[SuspectKey]Suspect{}
		for i := lo; i < hi; i++ {
			out[i] = judgeItem(w, int(items[i]), scratch)
		}
		return nil
	})
}

// partsOf is how many parts [0, n) is judged in: up to judgeParts, one per
// CPU, when n is large enough to be worth it.
func partsOf(n int) int {
	return max(1, min(runtime.GOMAXPROCS(0), judgeParts, n/judgePartMin))
}

// inParallel calls fn on the partsOf(n) consecutive parts of [0, n) at once;
// p numbers the part. A single part runs on the caller's goroutine.
func inParallel(n int, fn func(p, lo, hi int)) {
	parts := partsOf(n)
	if parts == 1 {
		fn(0, 0, n)
		return
	}
	var wg sync.WaitGroup
	for p := range parts {
		wg.Go(func() { fn(p, n*p/parts, n*(p+1)/parts) })
	}
	wg.Wait()
}
