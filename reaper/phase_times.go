package reaper

import "time"

// PhaseTime is how long one phase of a pass took, so that a slow pass says
// where its time went: the walk of the keyspace, the database, the wait for
// the heartbeats' second read, the judge or the writes.
type PhaseTime struct {
	Phase string  `json:"phase"`
	MS    float64 `json:"ms"`
}

// Phases of a pass as PhaseTimes names them, in the order they run. A
// phase that did not run is not listed.
const (
	// TimeChecks: the pass lock and the checks that the database takes
	// writes and Redis is the primary (not in an audit).
	TimeChecks = "checks"
	// TimeRedisRead: the walk of the keyspace and the values it found.
	TimeRedisRead = "redis read"
	// TimeDatabaseRead: the snapshot of the workers and tasks.
	TimeDatabaseRead = "database read"
	// TimeSecondRead: the wait for the heartbeats' second read, and the read.
	TimeSecondRead = "second read"
	// TimeSignalCheck: the check of earlier cancel signals.
	TimeSignalCheck = "cancel signal check"
	TimeJudge       = "judge"
	// TimeWrites: the releases and task updates, each rechecked first.
	TimeWrites = "writes"
	// TimeRecord: the report, and the record in the history of passes.
	TimeRecord = "record"
)

// phaseClock notes when each phase of a pass ends.
type phaseClock struct {
	last  time.Time
	times []PhaseTime
}

func newPhaseClock(start time.Time) *phaseClock { return &phaseClock{last: start} }

// done notes that a phase ended now; a nil clock notes nothing (a read
// for an inspection, not a pass).
func (c *phaseClock) done(phase string) {
	if c == nil {
		return
	}
	now := time.Now()
	c.times = append(c.times, PhaseTime{Phase: phase, MS: float64(now.Sub(c.last).Microseconds()) / 1000})
	c.last = now
}
