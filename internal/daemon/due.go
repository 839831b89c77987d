package daemon

import (
	"context"
	"log/slog"
	"time"

	"github.com/lock-reaper/lock-reaper/heartbeat"
	"github.com/lock-reaper/lock-reaper/reaper/pulpdb"
)

// What started a pass, PassResult.StartedBy.
const (
	StartedBySchedule   = ""
	StartedByKubernetes = "kubernetes: a worker container ended"
	StartedByHeartbeat  = "heartbeat: a worker row crossed ttl + heartbeat_grace"
	StartedByNextChange = "a pending verdict's time came (confirm_after, finished_grace)"
)

// verdictClock is what the loop knows of the verdicts' moments, on the
// database's clock: when the last pass judged (since) and when it said a
// verdict could change next (nextChange, zero for none).
type verdictClock struct {
	since, nextChange time.Time
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
// judged, or the moment that pass said a verdict could change has come.
// It is a pure function of its arguments; "" means not yet.
func passDue(hb pulpdb.Heartbeats, c verdictClock, grace time.Duration) string {
	switch {
	case heartbeat.DiedBetween(hb.Rows, grace, c.since, hb.Now):
		return StartedByHeartbeat
	case !c.nextChange.IsZero() && !hb.Now.Before(c.nextChange):
		return StartedByNextChange
	}
	return ""
}

// pollHeartbeats reads the heartbeats every HeartbeatPoll until a pass is
// due or ctx ends, and says why one is. The moment that started it counts
// as judged, so a pass that fails is not started again at every read: the
// schedule and its backoff retry it.
func (d *Daemon) pollHeartbeats(ctx context.Context, c *verdictClock) (reason string, ok bool) {
	t := time.NewTicker(d.cfg.HeartbeatPoll)
	defer t.Stop()
	failing := false
	for {
		select {
		case <-ctx.Done():
			return "", false
		case <-t.C:
		}
		hb, err := d.cfg.Heartbeats(ctx)
		if err != nil {
			if !failing && ctx.Err() == nil {
				d.log.Debug("heartbeat read failed; passes keep to the schedule", slog.String("error", err.Error()))
			}
			failing = true
			continue
		}
		failing = false
		if reason := passDue(hb, *c, d.cfg.HeartbeatGrace); reason != "" {
			c.passed(hb.Now, time.Time{})
			return reason, true
		}
	}
}
