package heartbeat

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestDiedBetween(t *testing.T) {
	t.Parallel()
	// ltRow's ttl is ltWorkerTTL; the grace ltGrace. A row heartbeating age
	// ago dies at now - age + ttl + grace.
	deathIn := func(d time.Duration) AppStatus {
		return ltRow("r", "1@w", "worker", ltWorkerTTL, ltWorkerTTL+ltGrace-d)
	}
	since := ltNow.Add(-3 * time.Second)
	for name, tc := range map[string]struct {
		rows  []AppStatus
		since time.Time
		want  bool
	}{
		"died a second ago, after the last pass":          {[]AppStatus{deathIn(-time.Second)}, since, true},
		"dies exactly now":                                {[]AppStatus{deathIn(0)}, since, true},
		"died exactly at the last pass: that pass saw it": {[]AppStatus{deathIn(-3 * time.Second)}, since, false},
		"died before the last pass":                       {[]AppStatus{deathIn(-time.Minute)}, since, false},
		"dies in a second":                                {[]AppStatus{deathIn(time.Second)}, since, false},
		"alive":                                           {[]AppStatus{ltRow("a", "1@a", "worker", ltWorkerTTL, time.Second)}, since, false},
		"one of many":                                     {[]AppStatus{deathIn(time.Hour), deathIn(-time.Second), deathIn(-time.Hour)}, since, true},
		"no pass yet":                                     {[]AppStatus{deathIn(-time.Second)}, time.Time{}, false},
		"no rows":                                         {nil, since, false},
		"a heartbeat from the future (a clock ahead) dies later": {[]AppStatus{ltRow("f", "1@f", "worker", ltWorkerTTL, -time.Minute)}, since, false},
	} {
		require.Equal(t, tc.want, DiedBetween(tc.rows, ltGrace, tc.since, ltNow), name)
	}
}

// WentStaleBetween: a row of a pod's owner within its ttl at the last pass
// and past it now; a row the last pass already saw stale, a row still within
// its ttl and a row no pod rule judges are not.
func TestWentStaleBetween(t *testing.T) {
	t.Parallel()
	// A row heartbeating age ago goes stale at now - age + ttl.
	staleFor := func(d time.Duration) AppStatus {
		return ltRow("r", "1@w", "worker", ltWorkerTTL, ltWorkerTTL+d)
	}
	since := ltNow.Add(-3 * time.Second)
	for name, tc := range map[string]struct {
		rows  []AppStatus
		since time.Time
		want  bool
	}{
		"stale for a second, after the last pass":            {[]AppStatus{staleFor(time.Second)}, since, true},
		"stale since exactly the last pass: it saw it alive": {[]AppStatus{staleFor(3 * time.Second)}, since, true},
		"stale before the last pass: that pass saw it stale": {[]AppStatus{staleFor(4 * time.Second)}, since, false},
		"at its ttl exactly now: still within it":            {[]AppStatus{staleFor(0)}, since, false},
		"within its ttl":       {[]AppStatus{staleFor(-time.Second)}, since, false},
		"dead long ago":        {[]AppStatus{staleFor(time.Hour)}, since, false},
		"an API process's row": {[]AppStatus{ltRow("a", "1@api-pod", "api", ltWorkerTTL, ltWorkerTTL+time.Second)}, since, true},
		"a content app's row: no pod rule judges it": {[]AppStatus{ltRow("c", "1@content-pod", "content", ltWorkerTTL, ltWorkerTTL+time.Second)}, since, false},
		"a name that names no pod":                   {[]AppStatus{ltRow("n", "worker-1", "worker", ltWorkerTTL, ltWorkerTTL+time.Second)}, since, false},
		"one of many":                                {[]AppStatus{staleFor(-time.Hour), staleFor(time.Second), staleFor(time.Hour)}, since, true},
		"no pass yet":                                {[]AppStatus{staleFor(time.Second)}, time.Time{}, false},
		"no rows":                                    {nil, since, false},
	} {
		require.Equal(t, tc.want, WentStaleBetween(tc.rows, tc.since, ltNow), name)
	}
}

func TestNextDeath(t *testing.T) {
	t.Parallel()
	a := ltRow("a", "1@a", "worker", ltWorkerTTL, time.Second)
	b := ltRow("b", "1@b", "worker", ltWorkerTTL, 20*time.Second)
	dead := ltRow("d", "1@d", "worker", ltWorkerTTL, time.Hour)
	require.Equal(t, b.LastHeartbeat.Add(ltWorkerTTL+ltGrace), NextDeath([]AppStatus{a, b, dead}, ltGrace, ltNow))
	require.True(t, NextDeath([]AppStatus{dead}, ltGrace, ltNow).IsZero())
	require.True(t, NextDeath(nil, ltGrace, ltNow).IsZero())
}
