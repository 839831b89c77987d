package reaper_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/reaper"
)

// TestPassPhaseTimes: a pass says where its time went, each phase it ran
// once and in the order it ran, within the pass's duration (the dead owner
// makes each read the heartbeats a second time); an audit has no
// pass lock to take and writes nothing.
func TestPassPhaseTimes(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	live := f.Worker("1@live", 2*time.Second)
	f.Worker("1@dead", time.Hour)
	r := repo()
	f.Acquire("1@dead", f.Task("running", live, []string{r}, -1), []string{r}, true)

	phases := func(rep *reaper.Report) []string {
		var names []string
		var sum float64
		for _, p := range rep.PhaseTimes {
			require.GreaterOrEqual(t, p.MS, 0.0, "%s", p.Phase)
			names = append(names, p.Phase)
			sum += p.MS
		}
		require.LessOrEqual(t, sum, float64(rep.DurationMS)+1, "the phases are parts of the pass")
		return names
	}
	audit := f.pass(f.reaper(nil), reaper.ModeAudit)
	require.Equal(t, []string{reaper.TimeRedisRead, reaper.TimeDatabaseRead, reaper.TimeSecondRead, reaper.TimeJudge, reaper.TimeWrites, reaper.TimeRecord}, phases(audit))
	once := f.pass(f.reaper(nil), reaper.ModeOnce)
	require.Equal(t, 2, once.Summary.Released, "the dead owner's task and resource locks")
	require.Equal(t, []string{reaper.TimeChecks, reaper.TimeRedisRead, reaper.TimeDatabaseRead, reaper.TimeSecondRead, reaper.TimeSignalCheck, reaper.TimeJudge, reaper.TimeWrites, reaper.TimeRecord}, phases(once))
}
