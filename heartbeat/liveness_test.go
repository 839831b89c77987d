package heartbeat

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
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
		{"future heartbeat: its age is bounded at zero", []row{{"a", ltWorkerTTL, -time.Minute}}, "a", Alive, 1, 0},
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
	for l, want := range map[Liveness]string{Alive: "alive", Late: "late", Dead: "dead", Gone: "gone", Liveness(42): "liveness(42)"} {
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

// TestFleetWorkerRows: the worker rows as the mass-death guard weighs them,
// in pulp_id order: only worker rows; a late row lives; a dead row whose
// name a live row carries again is superseded; a dead row's DeadFor runs
// from its last heartbeat + ttl + grace.
func TestFleetWorkerRows(t *testing.T) {
	t.Parallel()
	rows := NewFleet([]AppStatus{
		ltRow("1", "w1", "worker", ltWorkerTTL, time.Second),
		ltRow("2", "w2", "worker", ltWorkerTTL, 45*time.Second),
		ltRow("3", "w3", "worker", ltWorkerTTL, time.Hour),
		ltRow("4", "w1", "worker", ltWorkerTTL, 2*time.Hour),
		ltRow("5", "api", "api", 120*time.Second, time.Hour),
		ltRow("6", "w6", "worker", ltWorkerTTL, ltWorkerTTL+ltGrace),
	}, ltNow, ltGrace).WorkerRows()
	require.Equal(t, []WorkerRow{
		{ID: "1", Name: "w1", Live: true},
		{ID: "2", Name: "w2", Live: true},
		{ID: "3", Name: "w3", DeadFor: time.Hour - ltWorkerTTL - ltGrace},
		{ID: "4", Name: "w1", Superseded: true, DeadFor: 2*time.Hour - ltWorkerTTL - ltGrace},
		{ID: "6", Name: "w6", Live: true},
	}, rows)
}

// TestFleetHeartbeatAhead: a heartbeat ahead of the database's clock (the
// worker's clock runs ahead) counts as written now, never as younger, and
// the fleet lists the rows ahead by more than AheadMargin.
func TestFleetHeartbeatAhead(t *testing.T) {
	t.Parallel()
	f := NewFleet([]AppStatus{
		ltRow("a", "w-ahead", "worker", ltWorkerTTL, -5*time.Minute),
		ltRow("b", "w-skew", "worker", ltWorkerTTL, -AheadMargin),
		ltRow("c", "w-fine", "worker", ltWorkerTTL, time.Second),
	}, ltNow, ltGrace)
	require.Equal(t, time.Duration(0), f.Owner("w-ahead").HeartbeatAge)
	require.Equal(t, Alive, f.Owner("w-ahead").Liveness)
	ahead := f.RowsAhead()
	require.Len(t, ahead, 1)
	require.Equal(t, "a", ahead[0].ID)
}
