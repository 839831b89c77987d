package judge

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestJudgementsShowTheirOwnersReport: every listed judgement of an owner
// points to the plan's one record of that owner, the one its owner report
// is built from, in every plan (audit and once, break-glass release): the
// report and the judgements cannot tell two stories, and a dead worker's
// hundred thousand judgements cost one record.
func TestJudgementsShowTheirOwnersReport(t *testing.T) {
	t.Parallel()
	w := jtNewWorld()
	dead := w.worker("1@dead", time.Hour)
	live := w.worker("1@live", time.Second)
	for range 3 {
		w.acquire(w.task(StateRunning, dead, "prn:repo:"+w.id(), "shared:prn:domain"), "1@dead")
		w.acquire(w.task(StateRunning, live, "prn:repo:"+w.id(), "shared:prn:domain"), "1@live")
	}
	ago := 2 * time.Hour
	w.acquire(w.finished(StateCompleted, &ago, "prn:repo:"+w.id()), "1@live")
	for name, plan := range map[string]Plan{
		"all": All(w.snap, jtPolicy()), "findings": Findings(w.snap, jtPolicy()), "release": OwnerRelease(w.snap, jtPolicy(), "1@dead"),
	} {
		records := map[string]*ownerRecord{}
		for _, jd := range plan.Holdings {
			require.NotNil(t, jd.facts, "%s: %s", name, jd.Key)
			if o, seen := records[jd.Owner]; seen {
				require.True(t, o == jd.facts.owner, "%s: %s shares its owner's record", name, jd.Key)
			}
			records[jd.Owner] = jd.facts.owner
		}
		require.NotEmpty(t, records, name)
		for _, o := range plan.LockOwners {
			rec, listed := records[o.Name]
			if !listed {
				continue
			}
			require.Equal(t, rec.report(o.Name, o.Holdings), o, "%s: %s", name, o.Name)
		}
	}
}
