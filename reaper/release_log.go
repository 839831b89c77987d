package reaper

// releaseLog logs the results of the release batches on a goroutine of its
// own: formatting a line per holding (a few microseconds each, thousands per
// batch) then overlaps the next batch's wait on Redis instead of delaying
// it. Lines keep their order, and wait returns only once every batch handed
// to add is logged, so a pass's release lines all come before what follows.
type releaseLog struct {
	a       *actor
	batches chan loggedBatch
	done    chan struct{}
}

// loggedBatch is one batch's holdings (indexes into the plan) and results.
type loggedBatch struct {
	idx     []int
	results []Result
}

// releaseLogBacklog is how many batches may wait to be logged before add
// blocks: logging that falls behind slows the releases rather than piling up.
const releaseLogBacklog = 4

func (a *actor) startReleaseLog() *releaseLog {
	l := &releaseLog{a: a, batches: make(chan loggedBatch, releaseLogBacklog), done: make(chan struct{})}
	go func() {
		defer close(l.done)
		for b := range l.batches {
			for n, i := range b.idx {
				a.logHolding(a.plan.Holdings[i], b.results[n])
			}
		}
	}()
	return l
}

// add hands a batch over; neither slice may change afterwards.
func (l *releaseLog) add(idx []int, results []Result) {
	l.batches <- loggedBatch{idx: idx, results: results}
}

// wait returns once every batch added is logged; add must not be called
// after it.
func (l *releaseLog) wait() {
	close(l.batches)
	<-l.done
}
