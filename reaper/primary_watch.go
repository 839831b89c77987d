package reaper

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/lock-reaper/lock-reaper/reaper/judge"
	"github.com/lock-reaper/lock-reaper/reaper/pulpdb"
	"github.com/lock-reaper/lock-reaper/reaper/redislocks"
)

// GuardRedisFailover names the guard a pass reports when Redis's primary
// changed between its first write and its end (a Sentinel failover): what
// the old primary took and had not passed on is lost.
const GuardRedisFailover = "redis-failover"

// signalCheckLimit bounds how many tasks one pass checks the cancel signal
// of; the check goes on at the next pass.
const signalCheckLimit = 10_000

// SignalCheck is what a pass did about the cancel signals of the tasks
// lock-reaper finished within the signal's lifetime, when Redis's primary
// was not the one they were last checked on (a failover or restart since,
// or a first pass): a failover loses the signals its old primary had not
// passed on, and a worker that reads none runs on a task the database says
// is over.
type SignalCheck struct {
	// Primary is the primary checked (redislocks.Primary.String).
	Primary string `json:"primary"`
	// Checked counts the tasks whose signal was looked for.
	Checked int `json:"checked"`
	// Republished counts the signals Redis did not hold, published again
	// for the rest of their lifetime. A worker deletes the signal it reads,
	// so a missing one was not necessarily lost.
	Republished int `json:"republished"`
	// More says more tasks may be left for the next pass (signalCheckLimit).
	More bool `json:"more"`
}

// checkCancelSignals runs once a writing pass has its snapshot, before its
// first write (no pass writes without a snapshot): it reads which primary
// Redis is and, when that is not the primary the cancel signals were last
// checked on, publishes again the missing signals of the tasks lock-reaper
// finished within the signal's lifetime, at most signalCheckLimit of them,
// newest first. It returns the primary, for notePrimaryChange, and false
// when Redis would not say which it is. An error is the check's alone: the
// pass does its work and then reports it, and the next pass checks again.
func (r *Reaper) checkCancelSignals(ctx context.Context, rep *Report) (redislocks.Primary, bool, error) {
	primary, rec, err := redislocks.ReadPrimary(ctx, r.rdb, r.cfg.RedisTimeout)
	if err != nil {
		note := "Which Redis primary this is could not be read (" + err.Error() + "): a failover under or between passes goes unnoticed, " +
			"and the cancel signals it lost are not published again. Allow +info to the reaper's Redis user (internal/privilege/redis.acl)"
		rep.Notes = append(rep.Notes, note)
		r.log.Warn("Redis primary unknown", slog.String("note", note))
		return redislocks.Primary{}, false, nil
	}
	id := primary.String()
	if rec.Primary == id {
		return primary, true, nil
	}
	after := ""
	if rec.Checking == id {
		after = rec.After
	}
	tasks, now, next, err := pulpdb.ReadFinishedByReaper(ctx, r.pool, r.cfg.DatabaseTimeout, after, r.signalCheckLimit)
	if err != nil {
		return primary, true, inStep("reading the tasks lock-reaper finished, to check their cancel signals, from", SystemDatabase, err)
	}
	signals := make([]redislocks.SignalAgain, 0, len(tasks))
	for _, t := range tasks {
		if left := judge.SignalLifetimeLeft(t.FinishedAt, now); left > 0 {
			signals = append(signals, redislocks.SignalAgain{ID: t.ID, TTL: left})
		}
	}
	check := &SignalCheck{Primary: id, Checked: len(signals), More: len(tasks) == r.signalCheckLimit}
	rep.SignalCheck = check
	for start := 0; start < len(signals); start += r.cfg.BatchSize {
		n, err := redislocks.RepublishMissingCancelSignals(context.WithoutCancel(ctx), r.rdb, r.cfg.RedisTimeout, r.log,
			signals[start:min(start+r.cfg.BatchSize, len(signals))])
		check.Republished += n
		if err != nil {
			return primary, true, inStep("publishing missing cancel signals again in", SystemRedis, err)
		}
	}
	done := redislocks.SignalsChecked{Primary: id}
	if check.More {
		done = redislocks.SignalsChecked{Primary: rec.Primary, Checking: id, After: next}
	}
	if err := redislocks.WriteSignalsChecked(context.WithoutCancel(ctx), r.rdb, r.cfg.RedisTimeout, done); isOOM(err) {
		// A full Redis refuses the record, not the releases: the next pass
		// checks again, which is harmless (bookkeeping.go).
		rep.bookkeepingFailed = append(rep.bookkeepingFailed, RecordSignalsChecked)
		rep.Notes = append(rep.Notes, fmt.Sprintf("Redis is full (maxmemory reached, %s): the reaper's record %s was not written, and the pass went on without it (the next pass checks the cancel signals again); free memory in Redis or raise maxmemory", err.Error(), RecordSignalsChecked))
		r.log.Warn("Redis is full: a record of the reaper's own was not written; the pass goes on without it",
			slog.String("record", RecordSignalsChecked), slog.String("error", err.Error()))
	} else if err != nil {
		return primary, true, inStep("recording the cancel signals' check in", SystemRedis, err)
	}
	if check.Republished > 0 || check.More {
		note := fmt.Sprintf("Redis's primary (%s) is not the one lock-reaper last checked its cancel signals on (a failover or a restart since, or a first pass): "+
			"of %d tasks it finished in the signal's last 24 hours, %d had no cancel signal, published again for the rest of its 24 hours "+
			"(lost with an old primary, or read and deleted by a worker: the tasks are final either way)", id, check.Checked, check.Republished)
		if check.More {
			note += fmt.Sprintf("; the next pass checks the tasks finished before these %d", len(tasks))
		}
		rep.Notes = append(rep.Notes, note)
		r.log.Warn("published missing cancel signals again", slog.String("primary", id), slog.Int("checked", check.Checked),
			slog.Int("republished", check.Republished), slog.Bool("more", check.More))
	}
	return primary, true, nil
}

// notePrimaryChange runs after a writing pass's last write to Redis: when
// the primary is no longer the one the pass began on, or will not say, the
// pass reports the guard GuardRedisFailover. Its writes to the old primary
// may be lost; the next pass finds the primary unchecked
// (checkCancelSignals) and the locks as the new primary holds them.
func (r *Reaper) notePrimaryChange(ctx context.Context, rep *Report, before redislocks.Primary) {
	after, err := redislocks.ReadPrimaryIdentity(context.WithoutCancel(ctx), r.rdb, r.cfg.RedisTimeout)
	const next = "; the next pass reads the locks again and publishes again the missing cancel signals of the tasks lock-reaper finished in the signal's last 24 hours"
	var reason string
	switch {
	case err != nil:
		reason = "Redis could not say which primary it is after the pass's writes (" + err.Error() + "), so a failover may have lost some of them" + next
	case after != before:
		reason = fmt.Sprintf("Redis's primary changed during the pass (before its writes %s; after them %s): what the old primary took and had not passed on is lost, "+
			"this pass's releases and cancel signals among it", before, after) + next
	default:
		return
	}
	rep.Guards = append(rep.Guards, Guard{Name: GuardRedisFailover, Reason: reason})
	r.log.Warn("guard held work back", slog.String("guard", GuardRedisFailover), slog.String("reason", reason))
}
