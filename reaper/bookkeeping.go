package reaper

import (
	"fmt"
	"log/slog"

	"github.com/redis/go-redis/v9"
)

// The reaper's own records in Redis (the registries a pass saw, the
// suspects, the mass-death guard's memory) are bookkeeping: none of them
// frees memory, and a Redis full under noeviction refuses their writes
// (OOM) while it still runs the release script, whose DEL and SREM free
// memory. So a record that Redis refuses for want of memory never stops or
// precedes the releases: the pass goes on without it, the report notes it
// and the count goes up (lock_reaper_bookkeeping_write_failures_total).
// What goes without it is only what a missing record always meant: a
// guarded release left alone (owner-changed), a suspect sighted again as
// new, the guard's memory of a worker shorter.

// Records the reaper keeps in Redis, as the report and the metric name
// them.
const (
	RecordRegistriesSeen = "registries-seen"
	RecordSuspects       = "suspects"
	RecordSeenAlive      = "seen-alive"
	RecordSignalsChecked = "signals-checked"
)

// BookkeepingRecords lists every record, for the metric's labels.
var BookkeepingRecords = []string{RecordRegistriesSeen, RecordSuspects, RecordSeenAlive, RecordSignalsChecked}

// isOOM says Redis refused a write because it is out of memory
// (maxmemory reached under noeviction).
func isOOM(err error) bool { return redis.HasErrorPrefix(err, "OOM") }

// bookkeepingRefused records that Redis, full, refused record: a note in
// the report and a warning; the pass goes on.
func (a *actor) bookkeepingRefused(record, without string, err error) {
	a.bookkeepingFailed = append(a.bookkeepingFailed, record)
	a.notes = append(a.notes, fmt.Sprintf("Redis is full (maxmemory reached, %s): the reaper's record %s was not written, and the pass went on without it (%s); free memory in Redis or raise maxmemory", err.Error(), record, without))
	a.r.log.Warn("Redis is full: a record of the reaper's own was not written; the pass goes on without it",
		slog.String("record", record), slog.String("error", err.Error()))
}

// BookkeepingWriteFailures names the records of its own the pass could not
// write because Redis was full (lock_reaper_bookkeeping_write_failures_total).
func (r *Report) BookkeepingWriteFailures() []string { return r.bookkeepingFailed }
