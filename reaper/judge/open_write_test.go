package judge

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/heartbeat"
)

// TestRuleMayDispatch: the owners another session's uncommitted write to
// core_task can hold the shared memberships of (docs/verdicts.md,
// "Releasing").
func TestRuleMayDispatch(t *testing.T) {
	t.Parallel()
	immediate := ImmediateOwnerPrefix + "0198a5c4-0000-7000-8000-000000000001"
	for _, c := range []struct {
		name string
		l    heartbeat.Liveness
		want bool
	}{
		{"1@w", heartbeat.Alive, true},
		{"1@w", heartbeat.Late, true},
		{"1@w", heartbeat.Dead, false},
		{"1@w", heartbeat.Gone, false},
		{immediate, heartbeat.Alive, true},
		{immediate, heartbeat.Gone, true},
		{ImmediateOwnerPrefix + "not-a-uuid", heartbeat.Gone, false},
	} {
		require.Equal(t, c.want, MayDispatch(c.name, c.l), "%s %s", c.name, c.l)
	}
}

// TestRuleHoldingWrite: a write holds while it is known to have been open
// for less than the bound; its age when the role may see it, otherwise
// since its first sighting; the one open longest is named.
func TestRuleHoldingWrite(t *testing.T) {
	t.Parallel()
	bound := 2 * time.Minute
	age := func(d time.Duration) *Duration { v := Duration(d); return &v }
	young := OpenWrite{PID: 1, Transaction: "3/1", Age: age(10 * time.Second)}
	older := OpenWrite{PID: 2, Transaction: "4/1", Age: age(90 * time.Second)}
	tooOld := OpenWrite{PID: 3, Transaction: "5/1", Age: age(bound)}
	unseen := OpenWrite{PID: 4, Transaction: "6/1"}
	seenLong := OpenWrite{PID: 5, Transaction: "7/1", FirstSeen: rtNow.Add(-bound - time.Second)}
	seenLately := OpenWrite{PID: 6, Transaction: "8/1", FirstSeen: rtNow.Add(-time.Minute)}

	for _, c := range []struct {
		row     string
		ws      []OpenWrite
		wantPID int32
		wantN   int
	}{
		{"none", nil, 0, 0},
		{"a young transaction holds", []OpenWrite{young}, 1, 1},
		{"the one open longest is named", []OpenWrite{young, older}, 2, 2},
		{"a transaction open for the bound no longer holds", []OpenWrite{tooOld}, 0, 0},
		{"only those within the bound count", []OpenWrite{tooOld, young}, 1, 1},
		{"age unknown, first seen now: holds", []OpenWrite{unseen}, 4, 1},
		{"age unknown, seen open past the bound: no longer holds", []OpenWrite{seenLong}, 0, 0},
		{"age unknown, seen lately: holds", []OpenWrite{seenLately, seenLong}, 6, 1},
	} {
		w, n := HoldingWrite(c.ws, rtNow, bound)
		require.Equal(t, c.wantN, n, c.row)
		require.Equal(t, c.wantPID, w.PID, c.row)
	}

	// The age, when known, wins over a first sighting: it is the true one.
	known := OpenWrite{Age: age(5 * time.Second), FirstSeen: rtNow.Add(-time.Hour)}
	require.Equal(t, 5*time.Second, known.OpenFor(rtNow))
	require.True(t, known.AgeKnown())
	require.False(t, seenLately.AgeKnown())
	require.Equal(t, time.Minute, seenLately.OpenFor(rtNow))
	require.Zero(t, OpenWrite{FirstSeen: rtNow.Add(time.Second)}.OpenFor(rtNow), "a sighting ahead of the clock counts as none")
}
