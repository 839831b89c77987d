package reaper

import (
	"fmt"
	"github.com/lock-reaper/lock-reaper/internal/humantext"
	"time"

	"github.com/lock-reaper/lock-reaper/heartbeat"
)

// aheadNote says which rows' heartbeats are ahead of the database's clock,
// "" when none is: pulpcore stamps last_heartbeat with the worker's own
// clock, so a worker whose clock runs ahead by some minutes is judged alive
// those minutes longer after it dies, and its locks wait that much longer.
func aheadNote(rows []heartbeat.AppStatus, now time.Time, grace time.Duration) string {
	ahead := heartbeat.NewFleet(rows, now, grace).RowsAhead()
	if len(ahead) == 0 {
		return ""
	}
	worst := ahead[0]
	for _, r := range ahead[1:] {
		if r.LastHeartbeat.After(worst.LastHeartbeat) {
			worst = r
		}
	}
	return fmt.Sprintf("%d process rows have a heartbeat ahead of the database's clock, %s (%s) by %s: a process whose clock runs ahead is judged alive that much longer after it dies. To fix: synchronise the clocks of Pulp's hosts (NTP); lock-reaper doctor names every such row",
		len(ahead), worst.Name, worst.AppType, humantext.Setting(worst.LastHeartbeat.Sub(now).Round(time.Second)))
}
