package reaper

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/lock-reaper/lock-reaper/heartbeat"
	"github.com/lock-reaper/lock-reaper/internal/ctxwait"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
	"github.com/lock-reaper/lock-reaper/reaper/pulpdb"
)

// PhaseRecheckingHeartbeats: some rows look dead; the pass reads the
// heartbeats again a period later before it acts on them.
const PhaseRecheckingHeartbeats = "rechecking heartbeats"

// readingsKept bounds the recent reads of the heartbeats a Reaper keeps: the
// daemon reads them every few seconds, and a pass needs one read a heartbeat
// period (and the margin) before its own.
const (
	readingsKept   = 32
	readingsMaxAge = 2 * time.Minute
)

// readings are the recent reads of the heartbeats, oldest first: the
// daemon's polls, the passes' snapshots and their second reads. A pass
// whose snapshot has one a period older needs no read of its own.
type readings struct {
	mu   sync.Mutex
	list []heartbeat.Reading
}

// add keeps rd, in the order of the database's clock, and forgets reads
// older than readingsMaxAge before it or beyond readingsKept.
func (rs *readings) add(rd heartbeat.Reading) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if n := len(rs.list); n > 0 && !rd.Now.After(rs.list[n-1].Now) {
		return
	}
	rs.list = append(rs.list, rd)
	drop := 0
	for drop < len(rs.list)-1 && (len(rs.list)-drop > readingsKept || rd.Now.Sub(rs.list[drop].Now) > readingsMaxAge) {
		drop++
	}
	rs.list = append(rs.list[:0:0], rs.list[drop:]...)
}

// before is the newest read at least d older than now, if any.
func (rs *readings) before(now time.Time, d time.Duration) (heartbeat.Reading, bool) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	for i := len(rs.list) - 1; i >= 0; i-- {
		if now.Sub(rs.list[i].Now) >= d {
			return rs.list[i], true
		}
	}
	return heartbeat.Reading{}, false
}

// settleDeaths says what reads of the heartbeats a period apart say of the
// rows the snapshot finds dead and a pass would act on (judge.DeathsToSettle).
// A read the Reaper already has, a period or more before the snapshot (the
// daemon's polls), may settle them; otherwise the pass waits until a period
// after its snapshot and reads the heartbeats again. readAt is when the
// snapshot's database read began, on this process's clock. A second read
// that fails leaves those rows unsettled, held this pass: it is said, not
// raised. Only a context that ends fails the pass.
func (r *Reaper) settleDeaths(ctx context.Context, snap judge.Snapshot, readAt time.Time, opts Options, rep *Report) (*heartbeat.Motion, error) {
	ids := judge.DeathsToSettle(snap, r.cfg.Policy)
	if len(ids) == 0 {
		return nil, nil
	}
	grace := r.cfg.Policy.HeartbeatGrace
	wait := judge.RecheckAfter(snap.AppStatuses, ids, r.cfg.Policy)
	current := heartbeat.Reading{Now: snap.Now, Rows: snap.AppStatuses}
	var m *heartbeat.Motion
	if earlier, ok := r.recent.before(snap.Now, wait); ok {
		m = heartbeat.Settle(earlier, current, ids, grace, r.cfg.HeartbeatRecheck)
		if !anyUnsettled(m) {
			return m, nil
		}
	}
	r.log.Info("rows look dead: reading their heartbeats again before acting on them",
		slog.Int("rows", len(ids)), slog.Duration("after", wait))
	opts.phase(PhaseRecheckingHeartbeats, 0, 0)
	later, err := r.readHeartbeatsAfter(ctx, snap.Now, readAt, wait)
	if ctx.Err() != nil {
		return nil, inStep("waiting to read Pulp's worker heartbeats again from", SystemDatabase, ctx.Err())
	}
	if err != nil {
		note := fmt.Sprintf("the heartbeats could not be read again a period after the snapshot (%v): %d rows that look dead are held this pass", err, len(ids))
		rep.Notes = append(rep.Notes, note)
		r.log.Warn("second heartbeat read failed", slog.String("error", err.Error()), slog.Int("held", len(ids)))
		return m.Merge(heartbeat.UnsettledMotion(ids)), nil
	}
	r.recent.add(later)
	return m.Merge(heartbeat.Settle(current, later, ids, grace, r.cfg.HeartbeatRecheck)), nil
}

// secondReadTries bounds the reads readHeartbeatsAfter makes when the
// database's clock says one came too soon.
const secondReadTries = 3

// readHeartbeatsAfter reads the heartbeats once the database's clock is at
// least wait past first, the snapshot's now. It sleeps on this process's
// clock from readAt, when the snapshot's read began, a little past the
// wait; a snapshot whose transaction began late (a slow connection, a
// loaded machine) can still make that too soon on the database's clock,
// so a read that came too soon is made again after what is missing.
func (r *Reaper) readHeartbeatsAfter(ctx context.Context, first, readAt time.Time, wait time.Duration) (heartbeat.Reading, error) {
	const past = 100 * time.Millisecond
	until := readAt.Add(wait + past)
	var later heartbeat.Reading
	for range secondReadTries {
		if !ctxwait.Sleep(ctx, time.Until(until)) {
			return heartbeat.Reading{}, ctx.Err()
		}
		var err error
		if later, err = pulpdb.ReadHeartbeats(ctx, r.pool, r.cfg.DatabaseTimeout); err != nil {
			return heartbeat.Reading{}, err
		}
		missing := wait - later.Now.Sub(first)
		if missing <= 0 {
			break
		}
		until = time.Now().Add(missing + past)
	}
	return later, nil
}

func anyUnsettled(m *heartbeat.Motion) bool {
	for _, id := range m.Rows() {
		if rm, _ := m.Of(id); rm.Settlement == heartbeat.Unsettled {
			return true
		}
	}
	return false
}
