package judge

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// jtVersionedWorker adds an alive worker row with versions.
func (w *jtWorld) jtVersionedWorker(name string, versions map[string]string) string {
	id := w.worker(name, time.Second)
	w.snap.AppStatuses[len(w.snap.AppStatuses)-1].Versions = versions
	return id
}

// jtNeeds sets a task's versions and says the snapshot read them.
func (w *jtWorld) jtNeeds(id string, versions map[string]string) {
	t := w.snap.Tasks[id]
	t.Versions = versions
	w.snap.Tasks[id] = t
	w.snap.Versions = true
}

func TestCompatible(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name        string
		have, needs map[string]string
		want        bool
	}{
		{"no needs", map[string]string{"core": "3.116.0"}, nil, true},
		{"at the version", map[string]string{"file": "1.12.0"}, map[string]string{"file": "1.12.0"}, true},
		{"normalised equal", map[string]string{"file": "1.12"}, map[string]string{"file": "1.12.0"}, true},
		{"newer", map[string]string{"core": "3.116.0", "file": "1.13.0"}, map[string]string{"file": "1.12.0"}, true},
		{"older", map[string]string{"file": "1.11.0"}, map[string]string{"file": "1.12.0"}, false},
		{"pre-release of it", map[string]string{"file": "1.12.0rc1"}, map[string]string{"file": "1.12.0"}, false},
		{"label missing", map[string]string{"core": "3.116.0"}, map[string]string{"file": "1.12.0"}, false},
		{"one of two too old", map[string]string{"core": "3.116.0", "file": "1.11.0"}, map[string]string{"core": "3.85.0", "file": "1.12.0"}, false},
		{"unparseable worker version", map[string]string{"file": "dev"}, map[string]string{"file": "1.12.0"}, false},
		{"worker versions not read", nil, map[string]string{"file": "1.12.0"}, false},
	} {
		require.Equal(t, c.want, Compatible(c.have, c.needs), c.name)
	}
}

// TestJudgeStranded is the stranded row of the lost task table.
func TestJudgeStranded(t *testing.T) {
	t.Parallel()
	old := map[string]string{"core": "3.116.0", "file": "1.11.0"}
	fresh := map[string]string{"core": "3.116.0", "file": "1.12.0"}
	needs := map[string]string{"file": "1.12.0"}
	cases := []struct {
		name         string
		versionsRead bool
		compatible   int // compatible alive workers besides the claimer
		ago          *time.Duration
		want         Verdict
		action       Action
		why          string
	}{
		{"versions not read: stuck-claim as before", false, 1, nil, VerdictStuckClaim, ActionSuspect, ""},
		{"compatible worker online: suspect first", true, 1, nil, VerdictStranded, ActionSuspect,
			"needs file ≥ 1.12.0; its worker has file 1.11.0; 1 of 2 online workers have it"},
		{"compatible worker online, confirmed: requeued", true, 2, jtDur(jtConfirmAfter), VerdictStranded, ActionUpdate,
			"needs file ≥ 1.12.0; its worker has file 1.11.0; 2 of 3 online workers have it"},
		{"none compatible: reported, never written", true, 0, jtDur(time.Hour), VerdictStranded, ActionReport,
			"waits for a worker with file ≥ 1.12.0; none of 1 online workers has it"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := jtNewWorld()
			row := w.jtVersionedWorker("1@old", old)
			for i := range tc.compatible {
				w.jtVersionedWorker("1@new-"+string(rune('a'+i)), fresh)
			}
			// A dead compatible worker is not online.
			w.worker("1@dead", time.Hour)
			w.snap.AppStatuses[len(w.snap.AppStatuses)-1].Versions = fresh
			id := w.task(StateWaiting, row)
			if tc.versionsRead {
				w.jtNeeds(id, needs)
			}
			key := StuckClaimKey(id, row)
			if tc.ago != nil {
				w.remember(key.Key, key.Owner, tc.want, *tc.ago)
			}
			plan := w.judge(jtPolicy())
			tj, ok := jtTask(plan, id)
			require.True(t, ok)
			require.Equal(t, tc.want, tj.Verdict)
			require.Equal(t, tc.action, tj.Action)
			if tc.want != VerdictStranded {
				require.Nil(t, tj.Stranded)
				return
			}
			require.Equal(t, tc.why, tj.Stranded.String())
			switch tc.action {
			case ActionReport:
				require.False(t, tj.ClearClaim)
				require.Equal(t, StateWaiting, tj.StateAfter)
				// The sighting is kept for when a compatible worker comes.
				require.Equal(t, w.snap.Suspects[key], plan.Suspects[key])
			case ActionUpdate:
				require.True(t, tj.ClearClaim)
				// The requeue restarts the confirmation: stranded again by
				// the same claim, it waits confirm_after once more.
				require.Equal(t, Suspect{Verdict: VerdictStranded, FirstSeen: jtNow}, plan.Suspects[key])
			}
		})
	}
}

// TestJudgeStrandedNeedsTheStuckClaimFacts: a too-old claim is stranded
// only where stuck-claim would apply (alive, full scan, no task lock).
func TestJudgeStrandedNeedsTheStuckClaimFacts(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		set  func(w *jtWorld, id, row string)
	}{
		{"task lock held", func(w *jtWorld, id, row string) { w.acquire(id, "1@old") }},
		{"registry-only scan", func(w *jtWorld, _, _ string) { w.snap.FullScan = false }},
	} {
		w := jtNewWorld()
		row := w.jtVersionedWorker("1@old", map[string]string{"file": "1.0"})
		w.jtVersionedWorker("1@new", map[string]string{"file": "2.0"})
		id := w.task(StateWaiting, row)
		w.jtNeeds(id, map[string]string{"file": "2.0"})
		c.set(w, id, row)
		_, ok := jtTask(w.judge(jtPolicy()), id)
		require.False(t, ok, c.name)
	}
}

// TestJudgePropertyCompatibleClaimNeverRequeued: a waiting task claimed by a
// live worker that has every version it needs is never stranded, and never
// requeued as such, whatever the fleet's versions.
func TestJudgePropertyCompatibleClaimNeverRequeued(t *testing.T) {
	t.Parallel()
	versions := []string{"1.0", "1.0.0", "1.1rc1", "1.1", "1.1.post1", "1.2.dev3", "2!0.1", "bad", ""}
	labels := []string{"core", "file", "rpm"}
	draw := func(t *rapid.T, what string) map[string]string {
		m := map[string]string{}
		for _, l := range labels {
			if v := rapid.SampledFrom(versions).Draw(t, what+l); v != "" {
				m[l] = v
			}
		}
		return m
	}
	rapid.Check(t, func(rt *rapid.T) {
		w := jtNewWorld()
		have := draw(rt, "claimer")
		row := w.jtVersionedWorker("1@claimer", have)
		for i := range rapid.IntRange(0, 4).Draw(rt, "others") {
			w.jtVersionedWorker("1@other-"+string(rune('a'+i)), draw(rt, "other"))
		}
		id := w.task(StateWaiting, row)
		needs := draw(rt, "needs")
		w.jtNeeds(id, needs)
		if rapid.Bool().Draw(rt, "locked") {
			w.acquire(id, "1@claimer")
		}
		w.remember(StuckClaimKey(id, row).Key, row, VerdictStranded, time.Duration(rapid.IntRange(0, 3600).Draw(rt, "ago"))*time.Second)
		tj, ok := jtTask(w.judge(jtPolicy()), id)
		if Compatible(have, needs) {
			if ok && tj.Verdict == VerdictStranded {
				rt.Fatalf("compatible claim judged stranded: %+v", tj)
			}
		} else if ok && tj.Verdict == VerdictStranded && tj.Action == ActionUpdate && tj.Stranded.Compatible == 0 {
			rt.Fatalf("stranded task requeued with no compatible worker online: %+v", tj)
		}
	})
}

// TestStrandedWordsNameEveryVersion: when no online worker can run the
// task, the words name every version it needs, the ones its worker lacks
// first, since a worker that can run it needs them all; while one can, they
// name what its worker lacks.
func TestStrandedWordsNameEveryVersion(t *testing.T) {
	t.Parallel()
	s := Stranded{
		Needs:  []VersionNeed{{Label: "file", Least: "1.12.0", Has: "1.11.0"}},
		Met:    []VersionNeed{{Label: "core", Least: "3.116.0", Has: "3.117.0"}},
		Online: 25,
	}
	require.Equal(t, "waits for a worker with file ≥ 1.12.0, core ≥ 3.116.0; none of 25 online workers has them all", s.String())
	s.Compatible = 3
	require.Equal(t, "needs file ≥ 1.12.0; its worker has file 1.11.0; 3 of 25 online workers have it", s.String())
}
