package reaper

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/heartbeat"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
)

// TestGuardReason: each guard says what it counted and how the hold ends;
// the mass-death guard gives the real ages of the deaths, not the window.
func TestGuardReason(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		g    judge.Guard
		want []string
	}{
		{"mass death, remembered and recent", judge.Guard{Name: judge.GuardMassDeath, MaxDeadFraction: 0.5,
			Count: judge.MassDeathCount{Workers: 3, Dead: 2, Remembered: 1, Newest: 30 * time.Second, Oldest: 23 * time.Hour}},
			[]string{"2 of 3 worker rows are dead, dead for 30s to 23h0m0s (1 of them seen alive by an earlier pass, the others died within the last 3m0s), more than max_dead_fraction 0.5", "rerun with --force"}},
		{"mass death, none alive", judge.Guard{Name: judge.GuardMassDeath, MaxDeadFraction: 0.25,
			Count: judge.MassDeathCount{Workers: 2, Dead: 2, Newest: time.Hour, Oldest: 2 * time.Hour, NoneLive: true}},
			[]string{"2 of 2 worker rows are dead, dead for 1h0m0s to 2h0m0s (no worker row is alive), more than max_dead_fraction 0.25"}},
		{"mass death, each remembered, one age", judge.Guard{Name: judge.GuardMassDeath, MaxDeadFraction: 0.5,
			Count: judge.MassDeathCount{Workers: 5, Dead: 4, Remembered: 4, Newest: 19 * time.Minute, Oldest: 19 * time.Minute}},
			[]string{"4 of 5 worker rows are dead, dead for 19m0s (each was seen alive by an earlier pass)"}},
		{"mass death, each recent", judge.Guard{Name: judge.GuardMassDeath, MaxDeadFraction: 0.5,
			Count: judge.MassDeathCount{Workers: 5, Dead: 4, Newest: 1500 * time.Millisecond, Oldest: 2 * time.Minute}},
			[]string{"dead for 1.5s to 2m0s (each died within the last 3m0s)"}},
		{"max releases", judge.Guard{Name: judge.GuardMaxReleases, Wanted: 12, Limit: 10},
			[]string{"12 holdings to release, at most 10 per pass (max_releases): the rest waits for the next pass"}},
		{"max task updates", judge.Guard{Name: judge.GuardMaxTaskUpdates, Wanted: 3, Limit: 1},
			[]string{"3 tasks to update, at most 1 per pass (max_task_updates)"}},
		{"alive owner", judge.Guard{Name: judge.GuardAliveOwner, Owner: heartbeat.Owner{Name: "1@live", HeartbeatAge: 1234 * time.Millisecond}},
			[]string{"1@live has an online AppStatus row (heartbeat 1.2s ago)", "rerun with --force if it is really dead"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := GuardReason(tc.g)
			for _, w := range tc.want {
				require.Contains(t, got, w)
			}
		})
	}
}
