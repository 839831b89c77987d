package reaper

import (
	"fmt"
	"github.com/lock-reaper/lock-reaper/internal/humantext"
	"slices"
	"strings"
	"time"

	"github.com/lock-reaper/lock-reaper/heartbeat"
)

// ClockBehindMargin is how far a moving heartbeat may be behind the
// database's clock before it is reported: a write takes a moment to land.
const ClockBehindMargin = 5 * time.Second

// HeartbeatRecheck is what the pass's reads of the heartbeats a period
// apart said of the rows it found dead (heartbeat.Settle), by count.
type HeartbeatRecheck struct {
	// Rows is how many rows looked dead and were read again.
	Rows int `json:"rows"`
	// Moving rows wrote between the reads: alive whatever their age.
	Moving int `json:"moving"`
	// Stalled rows did not, while others that stopped with them did: held.
	Stalled int `json:"stalled"`
	// Settled rows did not, nor did any that stopped with them: dead.
	Settled int `json:"settled"`
	// Unsettled rows had no second read a period later: held.
	Unsettled int `json:"unsettled"`
	// Behind lists the moving rows whose clocks are behind the database's
	// by more than ClockBehindMargin.
	Behind []ClockBehind `json:"clock_behind,omitempty"`
}

// ClockBehind is a row whose heartbeat moves while its age says dead.
type ClockBehind struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// AtLeast is how far behind the database's clock its clock is, at least.
	AtLeast Seconds `json:"at_least_seconds"`
}

// noteMotion puts what the second reads said in the report: the counts, and
// a note per clock found behind.
func (rep *Report) noteMotion(m *heartbeat.Motion, rows []heartbeat.AppStatus) {
	if m.Len() == 0 {
		return
	}
	names := map[string]string{}
	for _, r := range rows {
		names[r.ID] = r.Name
	}
	rc := &HeartbeatRecheck{Rows: m.Len()}
	for _, id := range m.Rows() {
		rm, _ := m.Of(id)
		switch rm.Settlement {
		case heartbeat.Moving:
			rc.Moving++
			if rm.Behind > ClockBehindMargin {
				rc.Behind = append(rc.Behind, ClockBehind{ID: id, Name: names[id], AtLeast: Seconds(rm.Behind.Truncate(time.Second))})
			}
		case heartbeat.Stalled:
			rc.Stalled++
		case heartbeat.Settled:
			rc.Settled++
		default:
			rc.Unsettled++
		}
	}
	rep.HeartbeatRecheck = rc
	if note := behindNote(rc.Behind); note != "" {
		rep.Notes = append(rep.Notes, note)
	}
}

// behindNote says which workers write heartbeats that look dead when they
// land, "" for none.
func behindNote(behind []ClockBehind) string {
	if len(behind) == 0 {
		return ""
	}
	worst := slices.MaxFunc(behind, func(a, b ClockBehind) int { return int(a.AtLeast - b.AtLeast) })
	var who []string
	for _, b := range behind {
		who = append(who, b.Name)
	}
	return fmt.Sprintf("%d process rows write heartbeats that are old when they land (%s): %s's clock is at least %s behind the database's, or its writes are delayed. They are judged alive because their heartbeats move; pulpcore's own cleanup counts them missing. To fix: synchronise the clocks of Pulp's hosts (NTP); lock-reaper doctor checks the clocks",
		len(behind), strings.Join(who, ", "), worst.Name, humantext.Short(time.Duration(worst.AtLeast)))
}
