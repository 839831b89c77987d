package judge

import (
	"testing"
	"time"

	"github.com/lock-reaper/lock-reaper/heartbeat"
	"github.com/stretchr/testify/require"
)

// The mass-death guard's count over fleets as heartbeat judges them: what
// CountMassDeath makes of heartbeat.Fleet.WorkerRows, by heartbeats and with
// pod evidence.

var ltNow = jtNow

const (
	ltGrace     = jtHeartbeatGrace
	ltWorkerTTL = jtWorkerTTL
)

func ltRow(id, name, appType string, ttl, age time.Duration) heartbeat.AppStatus {
	return heartbeat.AppStatus{ID: id, Name: name, AppType: appType, TTL: ttl, LastHeartbeat: ltNow.Add(-age)}
}

func TestFleetWorkerCounts(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name              string
		rows              []heartbeat.AppStatus
		workers, deadRows int
	}{
		{"empty", nil, 0, 0},
		{"only api and content", []heartbeat.AppStatus{
			ltRow("1", "api", "api", 120*time.Second, time.Hour),
			ltRow("2", "content", "content", ltWorkerTTL, time.Hour),
		}, 0, 0},
		{"mixed", []heartbeat.AppStatus{
			ltRow("1", "w1", "worker", ltWorkerTTL, time.Second),
			ltRow("2", "w2", "worker", ltWorkerTTL, 45*time.Second), // late is not dead
			ltRow("3", "w3", "worker", ltWorkerTTL, time.Hour),
			ltRow("4", "w3", "worker", ltWorkerTTL, 2*time.Hour), // rows, not names
			ltRow("5", "api", "api", 120*time.Second, time.Hour),
		}, 4, 2},
		{"a dead row superseded by a live row of its name is left out", []heartbeat.AppStatus{
			ltRow("1", "w1", "worker", ltWorkerTTL, time.Hour),
			ltRow("2", "w1", "worker", ltWorkerTTL, 2*time.Hour),
			ltRow("3", "w1", "worker", ltWorkerTTL, time.Second),
			ltRow("4", "w2", "worker", ltWorkerTTL, time.Hour),
			ltRow("5", "w3", "worker", ltWorkerTTL, time.Second),
		}, 3, 1},
		{"boundary ttl+grace is not dead", []heartbeat.AppStatus{
			ltRow("1", "w1", "worker", ltWorkerTTL, ltWorkerTTL+ltGrace),
			ltRow("2", "w2", "worker", ltWorkerTTL, ltWorkerTTL+ltGrace+1),
		}, 2, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			workers, dead := ltWorkerCounts(heartbeat.NewFleet(tc.rows, ltNow, ltGrace), forever)
			require.Equal(t, tc.workers, workers)
			require.Equal(t, tc.deadRows, dead)
		})
	}
}

// ltWorkerCounts is what the mass-death guard counts of f's worker rows
// when no pass remembers one alive: the window rule alone.
func ltWorkerCounts(f *heartbeat.Fleet, window time.Duration) (workers, dead int) {
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
	died := func(id string, ago time.Duration) heartbeat.AppStatus {
		return ltRow(id, "old-"+id, "worker", ltWorkerTTL, ltWorkerTTL+ltGrace+ago)
	}
	live := func(id string) heartbeat.AppStatus { return ltRow(id, "new-"+id, "worker", ltWorkerTTL, time.Second) }
	cases := []struct {
		name          string
		rows          []heartbeat.AppStatus
		workers, dead int
	}{
		{"rolling restart: old rows long dead are left out", []heartbeat.AppStatus{
			live("1"), live("2"), live("3"), live("4"),
			died("5", 4*time.Minute), died("6", 4*time.Minute), died("7", 10*time.Minute), died("8", 16*time.Minute), died("9", time.Hour),
		}, 4, 0},
		{"sudden death: rows dead within the window count", []heartbeat.AppStatus{
			live("1"), live("2"), live("3"), live("4"),
			died("5", time.Second), died("6", 30*time.Second), died("7", time.Minute), died("8", 2*time.Minute), died("9", window),
		}, 9, 5},
		{"just past the window", []heartbeat.AppStatus{live("1"), died("2", window+1)}, 1, 0},
		{"a mix: only the recent ones", []heartbeat.AppStatus{live("1"), live("2"), died("3", time.Minute), died("4", time.Hour)}, 3, 1},
		{"no row alive: every row counts, however long dead", []heartbeat.AppStatus{
			died("1", time.Hour), died("2", 20*time.Minute), died("3", time.Second),
		}, 3, 3},
		{"a late row counts as not dead", []heartbeat.AppStatus{
			ltRow("1", "late", "worker", ltWorkerTTL, 45*time.Second), died("2", time.Hour),
		}, 1, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			workers, dead := ltWorkerCounts(heartbeat.NewFleet(tc.rows, ltNow, ltGrace), window)
			require.Equal(t, tc.workers, workers)
			require.Equal(t, tc.dead, dead)
		})
	}
}

func TestMassDeathCountsCertainPodDeaths(t *testing.T) {
	t.Parallel()
	rows := []heartbeat.AppStatus{gfWorker("live", time.Second), gfWorker("a", 40*time.Second), gfWorker("b", 40*time.Second)}
	workers, dead := ltWorkerCounts(heartbeat.NewFleet(rows, ltNow, ltGrace).WithPods(heartbeat.NewPodView([]heartbeat.Pod{gfLivePod}, gfSeen("live", "a", "b")), jtPolicy().Kubernetes), 3*time.Minute)
	require.Equal(t, 3, workers)
	require.Equal(t, 2, dead, "pods gone are deaths the mass-death guard sees")
}

// gfWorker is a worker row created an hour ago, heartbeat age old.
func gfWorker(id string, age time.Duration) heartbeat.AppStatus {
	r := ltRow(id, "1@"+id, "worker", ltWorkerTTL, age)
	r.PulpCreated = ltNow.Add(-time.Hour)
	return r
}

// gfLivePod is the running, ready pod of the live worker gfWorker("live", ...).
var gfLivePod = heartbeat.Pod{Name: "live", UID: "uid-live", Phase: "Running", Ready: true, ContainersReady: true,
	StartTime: kjAt(3 * time.Hour), Container: &heartbeat.Container{Name: "worker", Running: true, StartedAt: kjAt(2 * time.Hour)}}

// gfSeen remembers every name as seen by an earlier list.
func gfSeen(names ...string) map[string]heartbeat.SeenPod {
	out := map[string]heartbeat.SeenPod{}
	for _, n := range names {
		out[n] = heartbeat.SeenPod{UID: "uid-" + n, Seen: ltNow.Add(-time.Minute)}
	}
	return out
}
