package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/lock-reaper/lock-reaper/internal/exitcode"
	"github.com/lock-reaper/lock-reaper/internal/nearest"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
)

// exitUnknownOwner is the exit code of `release --owner` and `locks --owner`
// for an owner that holds nothing and has no AppStatus row: most likely a
// typo, which must not read as "nothing to do".
const exitUnknownOwner = exitcode.Usage

// knownOwner says whether the snapshot knows owner: as the owner of a
// holding or as an AppStatus name.
func knownOwner(snap judge.Snapshot, owner string) bool {
	for _, h := range snap.Holdings {
		if h.Owner == owner {
			return true
		}
	}
	for _, a := range snap.AppStatuses {
		if a.Name == owner {
			return true
		}
	}
	return false
}

// reportUnknownOwner says that owner is unknown and lists the nearest known
// owners, so that a typo during an incident is not taken for success.
func reportUnknownOwner(w io.Writer, cmd string, snap judge.Snapshot, owner string) {
	var names []string
	for _, h := range snap.Holdings {
		names = append(names, h.Owner)
	}
	for _, a := range snap.AppStatuses {
		names = append(names, a.Name)
	}
	fmt.Fprintf(w, "lock-reaper %s: owner %s holds no lock and has no AppStatus row.\n", cmd, quoteText(owner))
	near := nearest.Names(owner, names, 5, true)
	if len(near) == 0 {
		fmt.Fprintln(w, "No owner holds a lock and there is no AppStatus row: is this Pulp's Redis and database?")
		return
	}
	for i, n := range near {
		near[i] = quoteText(n)
	}
	fmt.Fprintf(w, "Nearest known owners: %s\n", strings.Join(near, ", "))
}
