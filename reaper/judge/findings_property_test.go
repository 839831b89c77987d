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
