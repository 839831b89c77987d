package judge

import (
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// requireFindingsOfJudge checks that Findings plans what Judge does,
// listing only the holdings that are neither healthy nor justified, and
// counting all of them alike.
func requireFindingsOfJudge(t require.TestingT, snap Snapshot, p Policy) {
	full := All(snap, p)
	findings := Findings(snap, p)

	var want []Judgement
	for _, jd := range full.Holdings {
		if jd.Verdict != VerdictHealthy && jd.Verdict != VerdictJustified {
			want = append(want, jd)
		}
	}
	// An empty list is an empty list, however it was made: Findings sizes
	// its list before judging, All's filter here appends.
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
	total := 0
	for _, c := range findings.ByVerdict {
		total += c
	}
	require.Equal(t, len(snap.Holdings), total)
}

func TestJudgePropertyFindingsOnly(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		c := ptGen(t)
		requireFindingsOfJudge(t, c.snap, c.p)
	})
}

// TestJudgeFindingsLargeFleets covers fleets larger than rapid draws: a
// busy fleet, and one dead owner's, whose holdings are all findings.
func TestJudgeFindingsLargeFleets(t *testing.T) {
	t.Parallel()
	for name, snap := range map[string]Snapshot{
		"busy fleet": jbFleet(20_000),
		"one owner":  jbOneOwner(10_000),
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p := DefaultPolicy()
			p.MaxReleases = len(snap.Holdings)
			p.Force = true
			requireFindingsOfJudge(t, snap, p)
		})
	}
}
