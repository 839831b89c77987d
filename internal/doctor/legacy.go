package doctor

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/lock-reaper/lock-reaper/heartbeat"
	"github.com/lock-reaper/lock-reaper/reaper"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
)

func checkLegacyOwners(ctx context.Context, t Target) Result {
	in, stop := inspected(ctx, t)
	if stop != nil {
		return *stop
	}
	return evalLegacyOwners(in.Snapshot.Holdings, in.Fleet())
}

// inspected is the opening of the checks that judge a snapshot: the
// inspection, or the result that stops the check (no reader given, or the
// read failed).
func inspected(ctx context.Context, t Target) (*reaper.Inspection, *Result) {
	if t.Inspect == nil {
		return nil, &Result{Status: OK, Evidence: "not checked: no snapshot reader given"}
	}
	in, err := t.Inspect(ctx)
	if err != nil {
		r := couldNotCheck("read the locks and heartbeats", err, "fix what the other checks report, then run lock-reaper doctor again.")
		return nil, &r
	}
	return in, nil
}

// legacyOwner is an owner holding locks that no registry lists and no
// AppStatus row names.
type legacyOwner struct {
	name     string
	holdings int
}

// evalLegacyOwners counts the owners that hold locks, have no AppStatus row
// and are in no owner registry: locks of workers older than the registry
// (pulpcore before 3.117) whose rows are gone. Only a keyspace scan finds
// them, and pulpcore's orphan reconcile, which walks the registry, never
// does. immediate-<uuid> owners never have a row and are left out.
func evalLegacyOwners(holdings []judge.Holding, fleet *heartbeat.Fleet) Result {
	counts := map[string]int{}
	registered := map[string]bool{}
	for _, h := range holdings {
		if strings.HasPrefix(h.Owner, "immediate-") || fleet.Owner(h.Owner).Liveness != heartbeat.Gone {
			continue
		}
		counts[h.Owner]++
		registered[h.Owner] = registered[h.Owner] || h.Registered
	}
	var legacy []legacyOwner
	total := 0
	for name, n := range counts {
		if !registered[name] {
			legacy = append(legacy, legacyOwner{name, n})
			total += n
		}
	}
	if len(legacy) == 0 {
		return Result{Status: OK, Evidence: fmt.Sprintf("%d holdings read by a full scan: no owner without an AppStatus row holds unregistered locks", len(holdings))}
	}
	sort.Slice(legacy, func(i, j int) bool {
		if legacy[i].holdings != legacy[j].holdings {
			return legacy[i].holdings > legacy[j].holdings
		}
		return legacy[i].name < legacy[j].name
	})
	var names []string
	for _, o := range legacy {
		names = append(names, fmt.Sprintf("%q %d", o.name, o.holdings))
	}
	return Result{Status: Warn, Evidence: fmt.Sprintf("%d owners with no AppStatus row and no registry hold %d holdings (%s): only a keyspace scan finds them",
		len(legacy), total, listSome(names, 5)),
		Fix: "let lock-reaper's full scans release them (owner-gone; keep full_scan_interval), and upgrade pulpcore to 3.117 so new locks are registered."}
}
