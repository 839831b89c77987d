package heartbeat

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// mtRow is a worker row (ttl 30 s) whose last heartbeat was at t.
func mtRow(id string, t time.Time) AppStatus {
	return AppStatus{ID: id, Name: "1@" + id, AppType: "worker", TTL: ltWorkerTTL, LastHeartbeat: t}
}

func mtRead(now time.Time, rows ...AppStatus) Reading { return Reading{Now: now, Rows: rows} }

func settlementsOf(m *Motion) map[string]Settlement {
	out := map[string]Settlement{}
	for _, id := range m.Rows() {
		rm, _ := m.Of(id)
		out[id] = rm.Settlement
	}
	return out
}

// TestSettleDecision is the second read's rule, one case per line of
// verdicts.md ("A death needs a second read").
func TestSettleDecision(t *testing.T) {
	t.Parallel()
	t0 := ltNow
	period := ltWorkerTTL / 3
	later := t0.Add(period + RecheckMargin)
	dead := t0.Add(-2 * time.Minute)
	cases := []struct {
		name           string
		earlier, after Reading
		ids            []string
		recheck        time.Duration
		want           map[string]Settlement
	}{
		{"unmoved a period later: settled", mtRead(t0, mtRow("a", dead)), mtRead(later, mtRow("a", dead)), []string{"a"}, 0,
			map[string]Settlement{"a": Settled}},
		{"unmoved too soon: unsettled", mtRead(t0, mtRow("a", dead)), mtRead(t0.Add(period), mtRow("a", dead)), []string{"a"}, 0,
			map[string]Settlement{"a": Unsettled}},
		{"a long ttl waits at most MaxRecheckPeriod", mtRead(t0, AppStatus{ID: "a", TTL: time.Hour, LastHeartbeat: t0.Add(-3 * time.Hour)}),
			mtRead(t0.Add(MaxRecheckPeriod+RecheckMargin), AppStatus{ID: "a", TTL: time.Hour, LastHeartbeat: t0.Add(-3 * time.Hour)}), []string{"a"}, 0,
			map[string]Settlement{"a": Settled}},
		{"the setting replaces the period", mtRead(t0, mtRow("a", dead)), mtRead(t0.Add(time.Second), mtRow("a", dead)), []string{"a"}, time.Second,
			map[string]Settlement{"a": Settled}},
		{"moved: moving, however old", mtRead(t0, mtRow("a", t0.Add(-90*time.Second))), mtRead(later, mtRow("a", later.Add(-90*time.Second))), []string{"a"}, 0,
			map[string]Settlement{"a": Moving}},
		{"moved across more than ttl + grace: says nothing", mtRead(t0, mtRow("a", dead)), mtRead(t0.Add(2*time.Minute), mtRow("a", t0.Add(-time.Second))), []string{"a"}, 0,
			map[string]Settlement{"a": Settled}},
		{"a group of which one moved: stalled", mtRead(t0, mtRow("a", dead), mtRow("b", dead.Add(3*time.Second)), mtRow("c", dead.Add(9*time.Second))),
			mtRead(later, mtRow("a", dead), mtRow("b", later), mtRow("c", dead.Add(9*time.Second))), []string{"a", "c"}, 0,
			map[string]Settlement{"a": Stalled, "c": Stalled}},
		{"a chain within a period each: one group", mtRead(t0, mtRow("a", dead), mtRow("b", dead.Add(8*time.Second)), mtRow("c", dead.Add(16*time.Second))),
			mtRead(later, mtRow("a", dead), mtRow("b", dead.Add(8*time.Second)), mtRow("c", later)), []string{"a"}, 0,
			map[string]Settlement{"a": Stalled}},
		{"a death more than a period from the movers: settled", mtRead(t0, mtRow("a", dead), mtRow("b", dead.Add(time.Minute))),
			mtRead(later, mtRow("a", dead), mtRow("b", later)), []string{"a"}, 0,
			map[string]Settlement{"a": Settled}},
		{"rows that came back before the earlier read are no group", mtRead(t0, mtRow("a", dead), mtRow("b", t0)),
			mtRead(later, mtRow("a", dead), mtRow("b", later)), []string{"a"}, 0,
			map[string]Settlement{"a": Settled}},
		{"not in the earlier read: unsettled", mtRead(t0), mtRead(later, mtRow("a", dead)), []string{"a"}, 0,
			map[string]Settlement{"a": Unsettled}},
		{"gone from the later read: settled", mtRead(t0, mtRow("a", dead)), mtRead(later), []string{"a"}, 0,
			map[string]Settlement{"a": Settled}},
		{"not stale in the earlier read: unsettled", mtRead(t0, mtRow("a", t0.Add(-20*time.Second))), mtRead(t0.Add(50*time.Second), mtRow("a", t0.Add(-20*time.Second))), []string{"a"}, 0,
			map[string]Settlement{"a": Unsettled}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := Settle(tc.earlier, tc.after, tc.ids, ltGrace, tc.recheck)
			require.Equal(t, tc.want, settlementsOf(m))
		})
	}
}

// TestSettleClockBehind: a worker whose clock is 90 s behind writes every
// period and is always 90-100 s old: the bound is what the earlier read
// proves.
func TestSettleClockBehind(t *testing.T) {
	t.Parallel()
	t0 := ltNow
	later := t0.Add(12 * time.Second)
	m := Settle(mtRead(t0, mtRow("a", t0.Add(-95*time.Second))), mtRead(later, mtRow("a", later.Add(-91*time.Second))), []string{"a"}, ltGrace, 0)
	rm, ok := m.Of("a")
	require.True(t, ok)
	require.Equal(t, Moving, rm.Settlement)
	require.Equal(t, 79*time.Second, rm.Behind)
}

// TestMotionMerge: a move either pair saw is life, a stall either saw
// holds, and one pair that settles suffices.
func TestMotionMerge(t *testing.T) {
	t.Parallel()
	a := &Motion{rows: map[string]RowMotion{"m": {Settlement: Settled}, "s": {Settlement: Settled}, "u": {Settlement: Unsettled}, "x": {Settlement: Unsettled}}}
	b := &Motion{rows: map[string]RowMotion{"m": {Settlement: Moving}, "s": {Settlement: Stalled}, "u": {Settlement: Settled}}}
	require.Equal(t, map[string]Settlement{"m": Moving, "s": Stalled, "u": Settled, "x": Unsettled}, settlementsOf(a.Merge(b)))
	require.Equal(t, settlementsOf(a.Merge(b)), settlementsOf(b.Merge(a)))
	require.Same(t, a, a.Merge(nil))
}

// TestFleetWithMotion: a moving row is alive, a stalled or unsettled one
// late, a settled one dead; a death the pods prove stays one; liveness only
// rises; the mass-death guard counts a moving row live.
func TestFleetWithMotion(t *testing.T) {
	t.Parallel()
	dead := ltNow.Add(-2 * time.Minute)
	rows := []AppStatus{mtRow("m", dead), mtRow("s", dead), mtRow("u", dead), mtRow("d", dead), mtRow("live", ltNow)}
	m := &Motion{rows: map[string]RowMotion{"m": {Settlement: Moving}, "s": {Settlement: Stalled}, "u": {Settlement: Unsettled}, "d": {Settlement: Settled}, "live": {Settlement: Unsettled}}}
	f := NewFleet(rows, ltNow, ltGrace).WithMotion(m)
	want := map[string]Liveness{"m": Alive, "s": Late, "u": Late, "d": Dead, "live": Alive}
	for id, l := range want {
		_, got, _ := f.Row(id)
		require.Equal(t, l, got, id)
		require.Equal(t, l, f.Owner("1@"+id).Liveness, id)
	}
	live := map[string]bool{}
	for _, w := range f.WorkerRows() {
		live[w.ID] = w.Live
	}
	require.Equal(t, map[string]bool{"m": true, "s": false, "u": false, "d": false, "live": true}, live)
	require.Same(t, f, f.WithMotion(nil))
}

// TestBehind: the newest move of each row bounds its clock; a row that does
// not move says nothing.
func TestBehind(t *testing.T) {
	t.Parallel()
	t0 := ltNow
	reads := []Reading{
		mtRead(t0, mtRow("lag", t0.Add(-95*time.Second)), mtRow("ok", t0.Add(-3*time.Second)), mtRow("still", t0.Add(-time.Hour))),
		mtRead(t0.Add(time.Second), mtRow("lag", t0.Add(-95*time.Second)), mtRow("ok", t0.Add(500*time.Millisecond)), mtRow("still", t0.Add(-time.Hour))),
		mtRead(t0.Add(2*time.Second), mtRow("lag", t0.Add(1500*time.Millisecond-90*time.Second)), mtRow("ok", t0.Add(500*time.Millisecond)), mtRow("still", t0.Add(-time.Hour))),
	}
	require.Equal(t, map[string]time.Duration{"lag": 90*time.Second - 500*time.Millisecond, "ok": 0}, Behind(reads))
}
