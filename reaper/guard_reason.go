package reaper

import (
	"fmt"
	"github.com/lock-reaper/lock-reaper/internal/humantext"
	"strconv"

	"github.com/lock-reaper/lock-reaper/reaper/judge"
)

// GuardReason words what a guard of the plan counted, for the report, the
// log and a refused release.
func GuardReason(g judge.Guard) string {
	switch g.Name {
	case judge.GuardMassDeath:
		return massDeathReason(g.Count, g.MaxDeadFraction)
	case judge.GuardMaxReleases:
		return fmt.Sprintf("%d holdings to release, at most %d per pass (max_releases): the rest waits for the next pass", g.Wanted, g.Limit)
	case judge.GuardMaxTaskUpdates:
		return fmt.Sprintf("%d tasks to update, at most %d per pass (max_task_updates): the rest waits for the next pass", g.Wanted, g.Limit)
	case judge.GuardHeartbeatStall:
		return fmt.Sprintf("%d process rows look dead, but of the largest group of rows whose heartbeats stopped within a heartbeat period of each other (%d rows), %d wrote again since: a stall is ending (a lock on core_appstatus, a paused PgBouncer, an overloaded database), and these may be the next to write; their holdings and tasks wait for a pass that finds them still silent a period later while none of their group comes back",
			g.Motion.Held, g.Motion.Group, g.Motion.Back)
	case judge.GuardHeartbeatRecheck:
		return fmt.Sprintf("%d process rows look dead, but no second read of the heartbeats a period later settled it: their holdings and tasks wait for the next pass", g.Motion.Held)
	case judge.GuardAliveOwner:
		return fmt.Sprintf("%s has an online AppStatus row (heartbeat %s ago): its locks are most likely healthy; nothing is released and no task is updated; rerun with --force if it is really dead",
			g.Owner.Name, humantext.Short(g.Owner.HeartbeatAge))
	}
	return g.Name
}

// massDeathReason says what the mass-death guard counted, with the deaths'
// real ages, and what ends the hold.
func massDeathReason(c judge.MassDeathCount, maxDeadFraction float64) string {
	ages := "dead for " + humantext.Short(c.Newest)
	if c.Oldest != c.Newest {
		ages = fmt.Sprintf("dead for %s to %s", humantext.Short(c.Newest), humantext.Short(c.Oldest))
	}
	var why string
	switch {
	case c.NoneLive:
		why = "no worker row is alive"
	case c.Remembered == c.Dead:
		why = "each was seen alive by an earlier pass"
	case c.Remembered > 0:
		why = fmt.Sprintf("%d of them seen alive by an earlier pass, the others died within the last %s", c.Remembered, judge.MassDeathWindow)
	default:
		why = fmt.Sprintf("each died within the last %s", judge.MassDeathWindow)
	}
	return fmt.Sprintf("%d of %d worker rows are dead, %s (%s), more than max_dead_fraction %s: a database too slow to record heartbeats looks like a dead fleet; nothing is released on dead grounds and no task is updated until pulpcore deletes those rows, the pods prove the deaths, or a pass runs with --force; rerun with --force if the workers really died",
		c.Dead, c.Workers, ages, why, strconv.FormatFloat(maxDeadFraction, 'f', -1, 64))
}
