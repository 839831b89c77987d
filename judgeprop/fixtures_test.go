package judgeprop

import (
	"fmt"
	"time"

	"github.com/lock-reaper/lock-reaper/judge"
	"github.com/lock-reaper/lock-reaper/pass"
)

// The fixtures the property tests share with the judge's own tests, which
// they cannot import: the judge's tests are in its module, these in the
// program's.

// jtNow is the database clock of every snapshot; ltNow is the same clock
// under the name the liveness properties use.
var jtNow = time.Date(2026, 7, 24, 12, 0, 0, 0, time.UTC)

var ltNow = jtNow

const (
	jtWorkerTTL = 30 * time.Second
	jtAPITTL    = 120 * time.Second
	ltGrace     = 30 * time.Second
)

var ptRules = judge.PodRules{HungWorkerGrace: pass.DefaultHungWorkerGrace, ClockSkew: pass.DefaultClockSkew}

// jtID returns the n-th deterministic canonical task/row uuid.
func jtID(n int) string {
	return fmt.Sprintf("%08x-0000-4000-8000-%012x", n, n)
}

func jtHasGuard(plan judge.Plan, name string) bool {
	for _, g := range plan.Guards {
		if g.Name == name {
			return true
		}
	}
	return false
}

// ptWorker is a worker row whose heartbeat is age old, created created ago.
func ptWorker(id, name string, age, created time.Duration) judge.AppStatus {
	return judge.AppStatus{ID: id, Name: name, AppType: "worker", TTL: jtWorkerTTL, LastHeartbeat: ltNow.Add(-age), PulpCreated: ltNow.Add(-created)}
}

func ptAt(ago time.Duration) *time.Time {
	t := ltNow.Add(-ago)
	return &t
}
