package daemon

import (
	"context"
	"log/slog"
	"time"

	"github.com/lock-reaper/lock-reaper/heartbeat"
	"github.com/lock-reaper/lock-reaper/internal/ctxwait"
	"github.com/lock-reaper/lock-reaper/reaper"
	"github.com/lock-reaper/lock-reaper/reaper/pulpdb"
)

// What started a pass, PassResult.StartedBy.
const (
	StartedBySchedule   = ""
	StartedByKubernetes = "kubernetes: a worker container ended"
	StartedByHeartbeat  = "heartbeat: a worker row crossed ttl + heartbeat_grace"
	StartedByRowGone    = "heartbeat: a worker row was deleted"
	StartedByStale      = "heartbeat: a worker row went past its ttl while the pods are only listed"
	StartedByNextChange = "a pending verdict's time came (confirm_after, finished_grace)"
)

// verdictClock is what the loop knows of the verdicts' moments, on the
// database's clock: when the last pass judged (since) and when it said a
// verdict could change next (nextChange, zero for none); and the rows the
// last heartbeat read found (rows, by id; nil before the first).
type verdictClock struct {
	since, nextChange time.Time
	rows              map[string]struct{}
}

// passed notes a pass that judged at dbNow and named its next change; a
// pass that judged nothing (dbNow zero) leaves since as it was.
func (c *verdictClock) passed(dbNow, nextChange time.Time) {
	if dbNow.After(c.since) {
		c.since = dbNow
	}
	c.nextChange = nextChange
}

// passDue says whether a pass must start now, given one read of the
// heartbeats, and why: a row died by its heartbeat since the last pass
// judged, a row the last read found is gone (its owner is gone now), a row
// went past its ttl since that pass while the pods are only listed
// (listed), or the moment that pass said a verdict could change has come.
//
// A row past its ttl is the moment pod-gone can apply: its pod's absence
// from a list then proves the death. A watch wakes a pass itself when a
// worker's container ends; a list is only made by a pass, so without a
// watch the pass is started here, once: the pass it starts judges at or
// after this read, so the row is not found going stale again. Without
// Kubernetes listed is false: the heartbeat's crossing is then the only
// moment.
//
// It is a pure function of its arguments; "" means not yet.
func passDue(hb pulpdb.Heartbeats, c verdictClock, grace time.Duration, listed bool) string {
	switch {
	case heartbeat.DiedBetween(hb.Rows, grace, c.since, hb.Now):
		return StartedByHeartbeat
	case !c.since.IsZero() && rowGone(c.rows, hb.Rows):
		return StartedByRowGone
	case listed && heartbeat.WentStaleBetween(hb.Rows, c.since, hb.Now):
		return StartedByStale
	case !c.nextChange.IsZero() && !hb.Now.Before(c.nextChange):
		return StartedByNextChange
	}
	return ""
}

// rowGone says a row of before is not among now's.
func rowGone(before map[string]struct{}, now []heartbeat.AppStatus) bool {
	if len(before) == 0 {
		return false
	}
	found := 0
	for _, r := range now {
		if _, ok := before[r.ID]; ok {
			found++
		}
	}
	return found < len(before)
}

// rowIDs is the set of the rows' ids.
func rowIDs(rows []heartbeat.AppStatus) map[string]struct{} {
	ids := make(map[string]struct{}, len(rows))
	for _, r := range rows {
		ids[r.ID] = struct{}{}
	}
	return ids
}

// pollHeartbeats reads the heartbeats until a pass is due or ctx ends, and
// says why one is: the first read HeartbeatPoll after it starts, each
// next one when nextPoll says. Each read is compared with the one before
// it, across passes: a row deleted while a pass ran starts one more pass,
// which finds the owner gone if that pass did not already.
func (d *Daemon) pollHeartbeats(ctx context.Context, c *verdictClock) (reason string, ok bool) {
	wait := d.cfg.HeartbeatPoll
	failing := false
	for {
		if !ctxwait.Sleep(ctx, wait) {
			return "", false
		}
		wait = d.cfg.HeartbeatPoll
		hb, err := d.cfg.Heartbeats(ctx)
		if err != nil {
			if !failing && ctx.Err() == nil {
				d.log.Debug("heartbeat read failed; passes keep to the schedule", slog.String("error", err.Error()))
			}
			failing = true
			continue
		}
		failing = false
		reason := passDue(hb, *c, d.cfg.HeartbeatGrace, d.podsListed())
		c.rows = rowIDs(hb.Rows)
		if reason != "" {
			c.passed(hb.Now, time.Time{})
			return reason, true
		}
		wait = nextPoll(hb, *c, d.cfg.HeartbeatPoll, d.cfg.HeartbeatGrace)
	}
}

// podsListed says whether the passes' pods come from a list each pass
// makes (Config.PodsListed); false without Kubernetes evidence.
func (d *Daemon) podsListed() bool {
	return d.cfg.PodsListed != nil && d.cfg.PodsListed()
}

// PodsListedBy is Config.PodsListed for the passes' pod source src: nil
// without one (no Kubernetes evidence); always true for a source each pass
// lists (kube.Source: no watch, or the watch refused); for a watch's
// (kube.Watcher, whose FromCache says whether ListPods reads its cache)
// true while its cache is not read: not yet synced, failing or silent. A
// watch that is read wakes passes itself (Config.Wake).
func PodsListedBy(src reaper.PodSource) func() bool {
	switch src := src.(type) {
	case nil:
		return nil
	case interface{ FromCache() bool }:
		return func() bool { return !src.FromCache() }
	default:
		return func() bool { return true }
	}
}

// nextPoll is how long after a read of the heartbeats the next read is due:
// at the first moment a row read can go stale (past its ttl) or cross ttl +
// grace (a heartbeat only moves those moments later), or the last pass's
// next change comes; never sooner than poll, and never later than grace: a
// row created after this read can die no sooner than its ttl + grace after
// it. The read of a row gone stale is the earlier read a pass settles the
// row's death on without waiting a period (reaper.settleDeaths: stale in
// the earlier read, unmoved a period later), and while the pods are only
// listed the read that starts the pass whose list can find its pod gone
// (passDue). So a fleet whose workers all beat is read two or three times
// a minute rather than every poll, and a worker that stops beating is read
// stale, then dead moments after its death, as before. A pure function of
// its arguments.
func nextPoll(hb pulpdb.Heartbeats, c verdictClock, poll, grace time.Duration) time.Duration {
	longest := max(poll, grace)
	at := c.nextChange
	consider := func(t time.Time) {
		if t.After(hb.Now) && (at.IsZero() || t.Before(at)) {
			at = t
		}
	}
	for _, r := range hb.Rows {
		consider(r.LastHeartbeat.Add(r.TTL + staleMargin))
		consider(r.DeathAt(grace))
	}
	if at.IsZero() {
		return longest
	}
	return min(max(at.Sub(hb.Now), poll), longest)
}

// staleMargin is how long after a row's ttl runs out it is read, so that the
// read finds it past its ttl.
const staleMargin = time.Second
