package judge

import "maps"

// judgeTaskLocks judges every task lock into taskLocks (by walk position),
// adding what the plan lists to listed, and offers each one's reservations
// to the resource holdings. It returns, for each resource holding, the
// first reserving task locks in the walk's order: the first half's offers
// win where both halves made one.
func (j *judge) judgeTaskLocks(listed *[]Judgement, taskLocks []judgedTaskLock) []reservedBy {
	var offers [2][]reservedBy
	j.inHalves(j.ix.tasks.placed, listed, func(part *judge, half int, listed *[]Judgement, from, to int) {
		offers[half] = part.judgeTaskLockRun(listed, taskLocks, from, to)
	})
	by, later := offers[0], offers[1]
	for i := range later {
		if by[i].kept < 0 {
			by[i].kept = later[i].kept
		}
		if by[i].released < 0 {
			by[i].released = later[i].released
		}
	}
	return by
}

// inHalves walks the positions of ps: a long walk in two halves at once,
// the second by a part of the judge with state of its own (suspects,
// counts, shared evidence, its list), absorbed when both are done. What the
// second lists is added to listed after the first's; its list is made at
// its likely size, since when one worker dies holding everything it is half
// the task locks' judgements, and a list grown by appending would leave a
// trail of copies.
func (j *judge) inHalves(ps []placed, listed *[]Judgement, walk func(part *judge, half int, listed *[]Judgement, from, to int)) {
	n := len(ps)
	if n < minPartWalk || j.onePart {
		walk(j, 0, listed, 0, n)
		return
	}
	other := j.part()
	otherListed := make([]Judgement, 0, j.expectedListedOf(ps[n/2:]))
	inParallel(func() {
		walk(j, 0, listed, 0, n/2)
	}, func() {
		walk(other, 1, &otherListed, n/2, n)
	})
	*listed = append(*listed, otherListed...)
	j.absorb(other)
}

// minPartWalk is the shortest walk worth two parts: below it a second
// goroutine costs more than it saves.
const minPartWalk = 4096

// judgeTaskLockRun judges the task locks at walk positions [from, to).
func (j *judge) judgeTaskLockRun(listed *[]Judgement, taskLocks []judgedTaskLock, from, to int) []reservedBy {
	by := noReservations(len(j.ix.resources.placed))
	for n := from; n < to; n++ {
		p := j.ix.tasks.placed[n]
		t, found := j.snap.Tasks[j.snap.Holdings[p.at].TaskID()]
		jd := j.confirm(j.decidedTaskLock(p, t, found))
		released := jd.Action == ActionRelease
		taskLocks[n] = judgedTaskLock{at: p.at, released: released, missing: !found}
		j.add(listed, jd, p)
		j.offerReservations(by, int32(n), p.owner, released, t.Reserved)
	}
	return by
}

// part is a part of this judging: what the judge only reads it shares,
// what it writes is its own until absorb.
func (j *judge) part() *judge {
	p := *j
	p.suspects = map[SuspectKey]Suspect{}
	p.byVerdict = map[Verdict]int{}
	p.byOwner = make([]int, len(j.byOwner))
	p.owners.evidence = maps.Clone(j.owners.evidence)
	p.owners.facts = nil
	return &p
}

// absorb adds what part p wrote to the judge's own.
func (j *judge) absorb(p *judge) {
	maps.Copy(j.suspects, p.suspects)
	for v, n := range p.byVerdict {
		j.byVerdict[v] += n
	}
	for o, n := range p.byOwner {
		j.byOwner[o] += n
	}
}
