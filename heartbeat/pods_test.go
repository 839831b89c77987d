package heartbeat

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

var ptRules = PodRules{HungWorkerGrace: DefaultHungWorkerGrace, ClockSkew: DefaultClockSkew}

// ptWorker is a worker row of owner name, heartbeat age old, created
// created ago.
func ptWorker(id, name string, age, created time.Duration) AppStatus {
	r := ltRow(id, name, "worker", ltWorkerTTL, age)
	r.PulpCreated = ltNow.Add(-created)
	return r
}

func ptAt(ago time.Duration) *time.Time {
	t := ltNow.Add(-ago)
	return &t
}

// ptRunning is a running pod whose worker container started started ago.
func ptRunning(name string, started time.Duration, restarts int32) Pod {
	return Pod{Name: name, Phase: "Running", Container: &Container{Name: "worker", Running: true, StartedAt: ptAt(started), Restarts: restarts}}
}

// ptLive is the live worker every trusted view needs.
var (
	ptLiveRow = ptWorker("live", "1@live", time.Second, time.Hour)
	ptLivePod = ptRunning("live", 2*time.Hour, 0)
)

func TestPodRules(t *testing.T) {
	t.Parallel()
	late := ltWorkerTTL + 10*time.Second          // past ttl, within grace
	dead := ltWorkerTTL + ltGrace + 2*time.Minute // past ttl + grace, within hung_worker_grace
	cases := []struct {
		name     string
		row      AppStatus
		pods     []Pod
		noLive   bool // leave out the live worker (and its pod)
		livePod  bool // keep the live worker's row but not its pod
		want     Liveness
		wantRule PodRule
	}{
		{name: "pod gone, late: dead now", row: ptWorker("r", "1@w", late, time.Hour), want: Dead, wantRule: PodGone},
		{name: "pod gone, already dead", row: ptWorker("r", "1@w", dead, time.Hour), want: Dead, wantRule: PodGone},
		{name: "pod gone, fresh heartbeat: outside the view, report only", row: ptWorker("r", "1@w", time.Second, time.Hour), want: Alive, wantRule: PodOutsideView},
		{name: "pod gone but a live worker has no pod: view not trusted", row: ptWorker("r", "1@w", late, time.Hour), livePod: true, want: Late, wantRule: PodNotInView},
		{name: "pod gone but no worker is alive: a slow database, not pods gone", row: ptWorker("r", "1@w", late, time.Hour), noLive: true, want: Late, wantRule: PodNotInView},
		{name: "hostname may be a truncated pod name", row: ptWorker("r", "1@w-truncat", late, time.Hour), pods: []Pod{ptRunning("w-truncated-name", time.Hour, 0)}, want: Late, wantRule: PodNotInView},
		{name: "api row, pod gone", row: func() AppStatus { r := ptWorker("r", "7@api", late, time.Hour); r.AppType = "api"; return r }(), want: Dead, wantRule: PodGone},
		{name: "content row: not covered by the selector", row: func() AppStatus { r := ptWorker("r", "7@content", late, time.Hour); r.AppType = "content"; return r }(), want: Late},
		{name: "not a pid@host name", row: ptWorker("r", "immediate-x", late, time.Hour), want: Late},

		{name: "restarted after the heartbeat, late: dead now", row: ptWorker("r", "1@w", late, time.Hour), pods: []Pod{ptRunning("w", late-5*time.Second, 1)}, want: Dead, wantRule: PodRestarted},
		{name: "restarted within the clock-skew margin: no proof", row: ptWorker("r", "1@w", late, time.Hour), pods: []Pod{ptRunning("w", late-time.Second, 1)}, want: Late, wantRule: PodSeen},
		{name: "restarted after a fresh heartbeat: the row is alive", row: ptWorker("r", "1@w", time.Second, time.Hour), pods: []Pod{ptRunning("w", 0, 1)}, want: Alive, wantRule: PodSeen},
		{name: "not running, ended after the heartbeat: dead now", row: ptWorker("r", "1@w", late, time.Hour), pods: []Pod{{Name: "w", Phase: "Running", Container: &Container{Name: "worker", FinishedAt: ptAt(late - 10*time.Second), Restarts: 3}}}, want: Dead, wantRule: PodRestarted},
		{name: "not running, ended before the heartbeat", row: ptWorker("r", "1@w", late, time.Hour), pods: []Pod{{Name: "w", Phase: "Pending", Container: &Container{Name: "worker", FinishedAt: ptAt(late + time.Minute)}}}, want: Late, wantRule: PodSeen},
		{name: "no container status", row: ptWorker("r", "1@w", late, time.Hour), pods: []Pod{{Name: "w", Phase: "Pending"}}, want: Late, wantRule: PodSeen},
		{name: "running since before its row, late: nothing to add", row: ptWorker("r", "1@w", late, time.Hour), pods: []Pod{ptRunning("w", 2*time.Hour, 0)}, want: Late, wantRule: PodSeen},

		{name: "alive by Kubernetes, not heartbeating: held", row: ptWorker("r", "1@w", dead, time.Hour), pods: []Pod{ptRunning("w", 2*time.Hour, 0)}, want: Late, wantRule: PodAliveNotHeartbeating},
		{name: "alive by Kubernetes, restarts before the row count for nothing", row: ptWorker("r", "1@w", dead, time.Hour), pods: []Pod{ptRunning("w", 2*time.Hour, 4)}, want: Late, wantRule: PodAliveNotHeartbeating},
		{name: "alive by Kubernetes, started within the margin after the row", row: ptWorker("r", "1@w", dead, time.Hour), pods: []Pod{ptRunning("w", time.Hour-time.Second, 0)}, want: Late, wantRule: PodAliveNotHeartbeating},
		{name: "alive by Kubernetes at exactly hung_worker_grace", row: ptWorker("r", "1@w", ltWorkerTTL+ltGrace+DefaultHungWorkerGrace, time.Hour), pods: []Pod{ptRunning("w", 2*time.Hour, 0)}, want: Late, wantRule: PodAliveNotHeartbeating},
		{name: "alive by Kubernetes past hung_worker_grace: dead", row: ptWorker("r", "1@w", ltWorkerTTL+ltGrace+DefaultHungWorkerGrace+1, time.Hour), pods: []Pod{ptRunning("w", 2*time.Hour, 0)}, want: Dead, wantRule: PodHungTooLong},
		{name: "container started after the row: not the row's process", row: ptWorker("r", "1@w", dead, time.Hour), pods: []Pod{ptRunning("w", 50*time.Minute, 1)}, want: Dead, wantRule: PodSeen},
		{name: "not PID 1: the container proves nothing of that process", row: ptWorker("r", "7@w", dead, time.Hour), pods: []Pod{ptRunning("w", 2*time.Hour, 0)}, want: Dead, wantRule: PodSeen},
		{name: "pod not running", row: ptWorker("r", "1@w", dead, time.Hour), pods: []Pod{{Name: "w", Phase: "Failed", Container: &Container{Name: "worker", Running: true, StartedAt: ptAt(2 * time.Hour)}}}, want: Dead, wantRule: PodSeen},
		{name: "container of the row's process ended after its heartbeat", row: ptWorker("r", "1@w", dead, time.Hour), pods: []Pod{{Name: "w", Phase: "Running", Container: &Container{Name: "worker", FinishedAt: ptAt(time.Minute)}}}, want: Dead, wantRule: PodRestarted},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rows := []AppStatus{tc.row}
			pods := tc.pods
			if !tc.noLive {
				rows = append(rows, ptLiveRow)
				if !tc.livePod {
					pods = append(pods, ptLivePod)
				}
			}
			f := NewFleet(rows, ltNow, ltGrace).WithPods(NewPodView(pods), ptRules)
			_, live, ok := f.Row(tc.row.ID)
			require.True(t, ok)
			require.Equal(t, tc.want, live, "row liveness")
			o := f.Owner(tc.row.Name)
			require.Equal(t, tc.want, o.Liveness, "owner liveness")
			if tc.wantRule == "" {
				require.Nil(t, o.Kubernetes)
				return
			}
			require.NotNil(t, o.Kubernetes)
			require.Equal(t, tc.wantRule, o.Kubernetes.Rule)
		})
	}
}

func TestPodRulesSameNameRestart(t *testing.T) {
	t.Parallel()
	// The worker 1@w died 40 s ago; its container restarted 35 s ago under the
	// same name and the new process already heartbeats in a row of its own.
	old := ptWorker("old", "1@w", 40*time.Second, time.Hour)
	successor := ptWorker("new", "1@w", time.Second, 30*time.Second)
	f := NewFleet([]AppStatus{old, successor}, ltNow, ltGrace).WithPods(NewPodView([]Pod{ptRunning("w", 35*time.Second, 1)}), ptRules)
	_, live, _ := f.Row("old")
	require.Equal(t, Dead, live, "the old incarnation's row is dead at once")
	_, live, _ = f.Row("new")
	require.Equal(t, Alive, live)
	o := f.Owner("1@w")
	require.Equal(t, Alive, o.Liveness)
	require.Equal(t, PodSeen, o.Kubernetes.Rule)
	require.Equal(t, int32(1), o.Kubernetes.Container.Restarts)
	workers, deadRows := f.WorkerCounts(3 * time.Minute)
	// The old row was only late by its heartbeat, so the guard counts the
	// death Kubernetes proved: pod evidence never makes the guard see fewer
	// deaths than the heartbeats do.
	require.Equal(t, 2, workers)
	require.Equal(t, 1, deadRows)
}

func TestPodRulesNilViewChangesNothing(t *testing.T) {
	t.Parallel()
	rows := []AppStatus{ptWorker("r", "1@w", 40*time.Second, time.Hour), ptLiveRow}
	require.Equal(t, NewFleet(rows, ltNow, ltGrace), NewFleet(rows, ltNow, ltGrace).WithPods(nil, ptRules))
	var none *Fleet
	require.Nil(t, none.WithPods(NewPodView(nil), ptRules))
}

func TestPodRulesMassDeathCountsCertainDeaths(t *testing.T) {
	t.Parallel()
	rows := []AppStatus{ptLiveRow, ptWorker("a", "1@a", 40*time.Second, time.Hour), ptWorker("b", "1@b", 40*time.Second, time.Hour)}
	workers, dead := NewFleet(rows, ltNow, ltGrace).WithPods(NewPodView([]Pod{ptLivePod}), ptRules).WorkerCounts(3 * time.Minute)
	require.Equal(t, 3, workers)
	require.Equal(t, 2, dead, "pods gone are deaths the mass-death guard sees")
}

// TestPodRulesOnlyCertainDeathHastens checks, for any fleet and any pods, that
// the Kubernetes rules make a row or an owner more dead only by the two
// certain-death rules, and less dead only by holding a dead row as late.
func TestPodRulesOnlyCertainDeathHastens(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		hosts := []string{"a", "b", "c", "d"}
		var rows []AppStatus
		for i := range rapid.IntRange(0, 6).Draw(t, "rows") {
			pid := rapid.SampledFrom([]string{"1", "7"}).Draw(t, "pid")
			host := rapid.SampledFrom(hosts).Draw(t, "host")
			age := time.Duration(rapid.Int64Range(-5, int64(20*time.Minute/time.Second)).Draw(t, "age")) * time.Second
			created := age + time.Duration(rapid.Int64Range(0, 3600).Draw(t, "created"))*time.Second
			r := ptWorker(fmt.Sprintf("id-%d", i), pid+"@"+host, age, created)
			r.AppType = rapid.SampledFrom([]string{"worker", "api", "content"}).Draw(t, "app_type")
			rows = append(rows, r)
		}
		var pods []Pod
		for _, host := range hosts {
			if !rapid.Bool().Draw(t, "has pod "+host) {
				continue
			}
			p := Pod{Name: host, Phase: rapid.SampledFrom([]string{"Running", "Pending", "Failed"}).Draw(t, "phase")}
			if rapid.Bool().Draw(t, "has container") {
				c := &Container{Name: "worker", Running: rapid.Bool().Draw(t, "running"), Restarts: int32(rapid.IntRange(0, 3).Draw(t, "restarts"))}
				at := ptAt(time.Duration(rapid.Int64Range(0, 7200).Draw(t, "container time")) * time.Second)
				if c.Running {
					c.StartedAt = at
				} else if rapid.Bool().Draw(t, "finished") {
					c.FinishedAt = at
				}
				p.Container = c
			}
			pods = append(pods, p)
		}
		plain := NewFleet(rows, ltNow, ltGrace)
		withPods := NewFleet(rows, ltNow, ltGrace).WithPods(NewPodView(pods), ptRules)
		certain := func(e *PodEvidence) bool { return e != nil && (e.Rule == PodGone || e.Rule == PodRestarted) }
		for _, r := range rows {
			_, before, _ := plain.Row(r.ID)
			_, after, _ := withPods.Row(r.ID)
			rule, _, _ := rowRule(r, before, ltNow, ltGrace, NewPodView(pods), ptRules, viewTrusted(plain.rows, ltNow, ltGrace, NewPodView(pods)))
			switch {
			case after < before:
				if rule != PodGone && rule != PodRestarted {
					t.Fatalf("row %s %s → %s by %q", r.Name, before, after, rule)
				}
				if before != Late {
					t.Fatalf("row %s was %s: only a late row can be hastened", r.Name, before)
				}
			case after > before:
				if rule != PodAliveNotHeartbeating || before != Dead || after != Late {
					t.Fatalf("row %s %s → %s by %q", r.Name, before, after, rule)
				}
			}
		}
		for _, o := range plain.Owners() {
			after := withPods.Owner(o.Name)
			if after.Liveness < o.Liveness && !certain(after.Kubernetes) {
				t.Fatalf("owner %s %s → %s by %+v", o.Name, o.Liveness, after.Liveness, after.Kubernetes)
			}
			if after.Liveness == Alive && o.Liveness != Alive {
				t.Fatalf("owner %s made alive by Kubernetes", o.Name)
			}
		}
	})
}

func TestCreatedFromID(t *testing.T) {
	t.Parallel()
	// 0x0192_7b2a_3c4d ms = 2024-10-13T...; a version 7 UUID.
	at, ok := createdFromID("01927b2a-3c4d-7abc-8def-0123456789ab")
	require.True(t, ok)
	require.Equal(t, time.UnixMilli(0x01927b2a3c4d).UTC(), at)
	for _, id := range []string{"", "r", "01927b2a-3c4d-4abc-8def-0123456789ab", "01927b2a-3c4d-7abc-8def-0123456789a", "0192zb2a-3c4d-7abc-8def-0123456789ab"} {
		_, ok := createdFromID(id)
		require.False(t, ok, id)
	}
	// A row without a creation time is never held alive by Kubernetes.
	r := ptWorker("r", "1@w", ltWorkerTTL+ltGrace+time.Minute, time.Hour)
	r.PulpCreated = time.Time{}
	f := NewFleet([]AppStatus{r, ptLiveRow}, ltNow, ltGrace).WithPods(NewPodView([]Pod{ptRunning("w", 2*time.Hour, 0), ptLivePod}), ptRules)
	require.Equal(t, Dead, f.Owner("1@w").Liveness)
}

// TestWorkerRowsPodProven: a death the pods prove (the pod gone, the
// container restarted since the last heartbeat) is marked on the row, for a
// row dead by its heartbeat long ago as for one the rules make dead; a row
// whose pod runs on is not.
func TestWorkerRowsPodProven(t *testing.T) {
	t.Parallel()
	rows := []AppStatus{
		ptLiveRow,
		ptWorker("gone", "1@gone", time.Hour, 2*time.Hour),
		ptWorker("late-gone", "1@late-gone", 40*time.Second, 2*time.Hour),
		ptWorker("restarted", "1@restarted", time.Hour, 2*time.Hour),
		ptWorker("hung", "1@hung", time.Hour, 2*time.Hour),
	}
	pods := NewPodView([]Pod{ptLivePod, ptRunning("restarted", 10*time.Minute, 1), ptRunning("hung", 3*time.Hour, 0)})
	proven := map[string]bool{}
	for _, r := range NewFleet(rows, ltNow, ltGrace).WithPods(pods, ptRules).WorkerRows() {
		proven[r.ID] = r.PodProven
	}
	require.Equal(t, map[string]bool{ptLiveRow.ID: false, "gone": true, "late-gone": true, "restarted": true, "hung": false}, proven)
	for _, r := range NewFleet(rows, ltNow, ltGrace).WorkerRows() {
		require.False(t, r.PodProven, "no pods, no proof: %s", r.ID)
	}
}
