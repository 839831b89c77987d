package judge

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestJudgeFindingsLargeFleets covers fleets larger than the property tests
// (reaper/judge/ (property tests)) draw: a busy fleet, and one dead owner's, whose holdings are
// all findings. Findings plans what All does, listing only the holdings
// that are neither healthy nor justified and counting all of them alike.
func TestJudgeFindingsLargeFleets(t *testing.T) {
	t.Parallel()
	for name, snap := range map[string]Snapshot{
		"busy fleet": jbFleet(20_000),
		"one owner":  jbOneOwner(10_000),
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p := jtPolicy()
			p.MaxReleases = len(snap.Holdings)
			p.Force = true
			full, findings := All(snap, p), Findings(snap, p)
			var want []Judgement
			for _, jd := range full.Holdings {
				if jd.Verdict.Finding() {
					want = append(want, jd)
				}
			}
			if len(findings.Holdings) == 0 {
				findings.Holdings = nil
			}
			require.Equal(t, want, findings.Holdings)
			listed := full
			listed.Holdings = findings.Holdings
			require.Equal(t, listed, findings, "everything but the healthy judgements is the same")
			counted := Plan{Holdings: full.Holdings}
			counted.countListed()
			require.Equal(t, counted.ByVerdict, findings.ByVerdict, "every holding is counted")
			require.Equal(t, counted.LockOwners, findings.LockOwners)
		})
	}
}
