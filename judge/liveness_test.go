package judge

import (
	"fmt"
	"testing"
	"time"
)

var ltNow = time.Date(2026, 7, 24, 12, 0, 0, 0, time.UTC)

const (
	ltGrace     = 30 * time.Second
	ltWorkerTTL = 30 * time.Second
)

func ltRow(id, name, appType string, ttl, age time.Duration) AppStatus {
	return AppStatus{ID: id, Name: name, AppType: appType, TTL: ttl, LastHeartbeat: ltNow.Add(-age)}
}

func TestLivenessOfRow(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		ttl   time.Duration
		age   time.Duration
		grace time.Duration
		want  Liveness
	}{
		{"fresh", ltWorkerTTL, 0, ltGrace, Alive},
		{"within ttl", ltWorkerTTL, 10 * time.Second, ltGrace, Alive},
		{"exactly ttl", ltWorkerTTL, ltWorkerTTL, ltGrace, Alive},
		{"ttl+1ns", ltWorkerTTL, ltWorkerTTL + 1, ltGrace, Late},
		{"within grace", ltWorkerTTL, 45 * time.Second, ltGrace, Late},
		{"exactly ttl+grace", ltWorkerTTL, ltWorkerTTL + ltGrace, ltGrace, Late},
		{"ttl+grace+1ns", ltWorkerTTL, ltWorkerTTL + ltGrace + 1, ltGrace, Dead},
		{"long dead", ltWorkerTTL, 24 * time.Hour, ltGrace, Dead},
		{"in the future", ltWorkerTTL, -time.Minute, ltGrace, Alive},
		{"zero ttl now", 0, 0, ltGrace, Alive},
		{"zero ttl 1ns", 0, 1, ltGrace, Late},
		{"zero ttl past grace", 0, ltGrace + 1, ltGrace, Dead},
		{"zero grace: late is dead", ltWorkerTTL, ltWorkerTTL + 1, 0, Dead},
		{"zero grace: exactly ttl", ltWorkerTTL, ltWorkerTTL, 0, Alive},
		{"api ttl", 120 * time.Second, 100 * time.Second, ltGrace, Alive},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := ltRow("r", "n", "worker", tc.ttl, tc.age)
			require.Equal(t, tc.want, r.Liveness(ltNow, tc.grace))
		})
	}
}

func TestFleetOwner(t *testing.T) {
	t.Parallel()
	type row struct {
		name     string
		ttl, age time.Duration
	}
	cases := []struct {
		name     string
		rows     []row
		owner    string
		want     Liveness
		wantRows int
		wantAge  time.Duration
	}{
		{"gone", nil, "a", Gone, 0, 0},
		{"gone: other names only", []row{{"b", ltWorkerTTL, 0}}, "a", Gone, 0, 0},
		{"alive", []row{{"a", ltWorkerTTL, 5 * time.Second}}, "a", Alive, 1, 5 * time.Second},
		{"late", []row{{"a", ltWorkerTTL, 40 * time.Second}}, "a", Late, 1, 40 * time.Second},
		{"dead", []row{{"a", ltWorkerTTL, time.Hour}}, "a", Dead, 1, time.Hour},
		{"dead row then live row", []row{{"a", ltWorkerTTL, time.Hour}, {"a", ltWorkerTTL, time.Second}}, "a", Alive, 2, time.Second},
		{"live row then dead row", []row{{"a", ltWorkerTTL, time.Second}, {"a", ltWorkerTTL, time.Hour}}, "a", Alive, 2, time.Second},
		{"dead and late", []row{{"a", ltWorkerTTL, time.Hour}, {"a", ltWorkerTTL, 50 * time.Second}}, "a", Late, 2, 50 * time.Second},
		{"late and dead", []row{{"a", ltWorkerTTL, 50 * time.Second}, {"a", ltWorkerTTL, time.Hour}}, "a", Late, 2, 50 * time.Second},
		{"three dead", []row{{"a", ltWorkerTTL, time.Hour}, {"a", ltWorkerTTL, 2 * time.Hour}, {"a", ltWorkerTTL, 61 * time.Second}}, "a", Dead, 3, 61 * time.Second},
		{"future heartbeat", []row{{"a", ltWorkerTTL, -time.Minute}}, "a", Alive, 1, -time.Minute},
		// A longer ttl keeps an older heartbeat alive: liveness is per row,
		// the best row decides.
		{"older row with longer ttl", []row{{"a", ltWorkerTTL, 50 * time.Second}, {"a", 120 * time.Second, 100 * time.Second}}, "a", Alive, 2, 50 * time.Second},
		{"empty name", []row{{"", ltWorkerTTL, 0}}, "", Alive, 1, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var rows []AppStatus
			for i, r := range tc.rows {
				rows = append(rows, ltRow(fmt.Sprintf("id-%d", i), r.name, "worker", r.ttl, r.age))
			}
			f := NewFleet(rows, ltNow, ltGrace)
			o := f.Owner(tc.owner)
			require.Equal(t, tc.owner, o.Name)
			require.Equal(t, tc.want, o.Liveness)
			require.Equal(t, tc.wantRows, o.Rows)
			require.Equal(t, tc.wantAge, o.HeartbeatAge)
		})
	}
}

func TestFleetRow(t *testing.T) {
	t.Parallel()
	rows := []AppStatus{
		ltRow("live", "a", "worker", ltWorkerTTL, time.Second),
		ltRow("late", "a", "worker", ltWorkerTTL, 45*time.Second),
		ltRow("dead", "a", "worker", ltWorkerTTL, time.Hour),
		ltRow("api", "7@api", "api", 120*time.Second, 100*time.Second),
	}
	f := NewFleet(rows, ltNow, ltGrace)
	for _, tc := range []struct {
		id   string
		want Liveness
	}{{"live", Alive}, {"late", Late}, {"dead", Dead}, {"api", Alive}} {
		r, live, ok := f.Row(tc.id)
		require.True(t, ok, tc.id)
		require.Equal(t, tc.id, r.ID)
		require.Equal(t, tc.want, live, tc.id)
	}
	// A row's own liveness, not its name's: the dead row stays dead although
	// its name is alive.
	require.Equal(t, Alive, f.Owner("a").Liveness)

	r, live, ok := f.Row("missing")
	require.False(t, ok)
	require.Equal(t, Gone, live)
	require.Equal(t, AppStatus{}, r)
	_, _, ok = f.Row("")
	require.False(t, ok, "NULL app_lock_id names no row")
}

func TestFleetWorkerCounts(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name              string
		rows              []AppStatus
		workers, deadRows int
	}{
		{"empty", nil, 0, 0},
		{"only api and content", []AppStatus{
			ltRow("1", "api", "api", 120*time.Second, time.Hour),
			ltRow("2", "content", "content", ltWorkerTTL, time.Hour),
		}, 0, 0},
		{"mixed", []AppStatus{
			ltRow("1", "w1", "worker", ltWorkerTTL, time.Second),
			ltRow("2", "w2", "worker", ltWorkerTTL, 45*time.Second), // late is not dead
			ltRow("3", "w3", "worker", ltWorkerTTL, time.Hour),
			ltRow("4", "w3", "worker", ltWorkerTTL, 2*time.Hour), // rows, not names
			ltRow("5", "api", "api", 120*time.Second, time.Hour),
		}, 4, 2},
		{"a dead row superseded by a live row of its name is left out", []AppStatus{
			ltRow("1", "w1", "worker", ltWorkerTTL, time.Hour),
			ltRow("2", "w1", "worker", ltWorkerTTL, 2*time.Hour),
			ltRow("3", "w1", "worker", ltWorkerTTL, time.Second),
			ltRow("4", "w2", "worker", ltWorkerTTL, time.Hour),
			ltRow("5", "w3", "worker", ltWorkerTTL, time.Second),
		}, 3, 1},
		{"boundary ttl+grace is not dead", []AppStatus{
			ltRow("1", "w1", "worker", ltWorkerTTL, ltWorkerTTL+ltGrace),
			ltRow("2", "w2", "worker", ltWorkerTTL, ltWorkerTTL+ltGrace+1),
		}, 2, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			workers, dead := ltWorkerCounts(NewFleet(tc.rows, ltNow, ltGrace), forever)
			require.Equal(t, tc.workers, workers)
			require.Equal(t, tc.deadRows, dead)
		})
	}
}

// ltWorkerCounts is what the mass-death guard counts of f's worker rows
// when no pass remembers one alive: the window rule alone.
func ltWorkerCounts(f *Fleet, window time.Duration) (workers, dead int) {
	c := CountMassDeath(f.WorkerRows(), nil, window)
	return c.Workers, c.Dead
}

// forever is a window no row of these tests has been dead for.
const forever = 100 * 365 * 24 * time.Hour

// TestFleetWorkerCountsRecentDeaths: while a worker row is alive, only the
// rows that died within the window count; with none alive, every row does.
func TestFleetWorkerCountsRecentDeaths(t *testing.T) {
	t.Parallel()
	const window = 3 * time.Minute
	// A row's death is its last heartbeat + ttl + grace (60 s here).
	died := func(id string, ago time.Duration) AppStatus {
		return ltRow(id, "old-"+id, "worker", ltWorkerTTL, ltWorkerTTL+ltGrace+ago)
	}
	live := func(id string) AppStatus { return ltRow(id, "new-"+id, "worker", ltWorkerTTL, time.Second) }
	cases := []struct {
		name          string
		rows          []AppStatus
		workers, dead int
	}{
		{"rolling restart: old rows long dead are left out", []AppStatus{
			live("1"), live("2"), live("3"), live("4"),
			died("5", 4*time.Minute), died("6", 4*time.Minute), died("7", 10*time.Minute), died("8", 16*time.Minute), died("9", time.Hour),
		}, 4, 0},
		{"sudden death: rows dead within the window count", []AppStatus{
			live("1"), live("2"), live("3"), live("4"),
			died("5", time.Second), died("6", 30*time.Second), died("7", time.Minute), died("8", 2*time.Minute), died("9", window),
		}, 9, 5},
		{"just past the window", []AppStatus{live("1"), died("2", window+1)}, 1, 0},
		{"a mix: only the recent ones", []AppStatus{live("1"), live("2"), died("3", time.Minute), died("4", time.Hour)}, 3, 1},
		{"no row alive: every row counts, however long dead", []AppStatus{
			died("1", time.Hour), died("2", 20*time.Minute), died("3", time.Second),
		}, 3, 3},
		{"a late row counts as not dead", []AppStatus{
			ltRow("1", "late", "worker", ltWorkerTTL, 45*time.Second), died("2", time.Hour),
		}, 1, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			workers, dead := ltWorkerCounts(NewFleet(tc.rows, ltNow, ltGrace), window)
			require.Equal(t, tc.workers, workers)
			require.Equal(t, tc.dead, dead)
		})
	}
}

func TestFleetOwners(t *testing.T) {
	t.Parallel()
	f := NewFleet([]AppStatus{
		ltRow("1", "c", "worker", ltWorkerTTL, time.Hour),
		ltRow("2", "a", "worker", ltWorkerTTL, time.Second),
		ltRow("3", "b", "api", 120*time.Second, time.Second),
		ltRow("4", "a", "worker", ltWorkerTTL, time.Hour),
	}, ltNow, ltGrace)
	owners := f.Owners()
	require.Equal(t, []Owner{
		{Name: "a", Liveness: Alive, HeartbeatAge: time.Second, Rows: 2},
		{Name: "b", Liveness: Alive, HeartbeatAge: time.Second, Rows: 1},
		{Name: "c", Liveness: Dead, HeartbeatAge: time.Hour, Rows: 1},
	}, owners)
	require.Equal(t, ltNow, f.Now)
	require.Equal(t, ltGrace, f.Grace)
	require.Empty(t, NewFleet(nil, ltNow, ltGrace).Owners())
}

func TestLivenessString(t *testing.T) {
	t.Parallel()
	for l, want := range map[Liveness]string{Alive: "alive", Late: "late", Dead: "dead", Gone: "gone", Liveness(42): "gone"} {
		require.Equal(t, want, l.String())
		b, err := l.MarshalText()
		require.NoError(t, err)
		require.Equal(t, want, string(b))
	}
	// Gone < Dead < Late < Alive: the best row of a name decides.
	require.Less(t, Gone, Dead)
	require.Less(t, Dead, Late)
	require.Less(t, Late, Alive)
}
