package cli

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/heartbeat"
	"github.com/lock-reaper/lock-reaper/internal/testing/passtest"
	"github.com/lock-reaper/lock-reaper/reaper"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
)

func TestTextReport(t *testing.T) {
	t.Parallel()
	age := reaper.Seconds(90 * time.Minute)
	rep := &reaper.Report{
		Mode: reaper.ModeOnce, DBNow: time.Date(2026, 7, 24, 10, 0, 0, 0, time.UTC),
		Scanned:    reaper.Scanned{Keys: 3, TaskLocks: 1, ResourceHoldings: 2, FullScan: true},
		LockOwners: []reaper.OwnerReport{{Name: "1@w", Liveness: "dead", HeartbeatAge: &age, Holdings: 3}},
		Findings: []reaper.Finding{
			{Judgement: new(passtest.WithEvidence(judge.Judgement{Holding: judge.Holding{Key: "task:a", Kind: judge.KindTask, Owner: "1@w"}, Verdict: judge.VerdictOwnerDead}, judge.Evidence{OwnerLiveness: heartbeat.Dead, HeartbeatAge: (*judge.Duration)(&age), TaskState: "running"})), Result: reaper.ResultReleased},
			{Judgement: &judge.Judgement{Holding: judge.Holding{Key: "task:b", Kind: judge.KindTask, Owner: "1@w"}, Verdict: judge.VerdictOwnerDead, Deferred: "max_releases"}, Result: reaper.ResultDeferred},
		},
		Summary: reaper.Summary{FindingsByResult: map[reaper.Result]int{reaper.ResultReleased: 1, reaper.ResultDeferred: 1}, Released: 1, Deferred: 1,
			HoldingsByVerdict: map[judge.Verdict]int{judge.VerdictOwnerDead: 2}},
	}
	var b bytes.Buffer
	require.NoError(t, writeReport(&b, "text", rep, 1))
	out := b.String()
	require.Contains(t, out, "lock-reaper once at 2026-07-24T10:00:00Z")
	require.Contains(t, out, "owner dead (heartbeat 1h30m0s ago); task running")
	require.Contains(t, out, "… and 1 more")
	require.NotContains(t, out, "task:b", "--limit 1 shows one finding")
	require.Contains(t, out, "released 1 holdings")
	require.Contains(t, out, "1 deferred to the next pass (max_releases)")

	// The mass-death guard's hold is not for the next pass: it says what
	// ends it.
	guarded := *rep
	guarded.Findings = append([]reaper.Finding{{Judgement: &judge.Judgement{Holding: judge.Holding{Key: "task:c", Kind: judge.KindTask, Owner: "1@w"},
		Verdict: judge.VerdictOwnerDead, Deferred: judge.DeferredMassDeath}, Result: reaper.ResultDeferred}}, rep.Findings...)
	guarded.Tasks = []reaper.TaskFinding{{TaskJudgement: &judge.TaskJudgement{ID: "c", Deferred: judge.DeferredMassDeath}, Result: reaper.ResultDeferred}}
	guarded.Summary.Deferred = 3
	b.Reset()
	require.NoError(t, writeReport(&b, "text", &guarded, 0))
	require.Contains(t, b.String(), "; 2 held back by the mass-death guard until pulpcore deletes the dead worker rows, "+
		"the pods prove the deaths, or a pass runs with --force; 1 deferred to the next pass (max_releases).")

	b.Reset()
	require.NoError(t, writeReport(&b, "json", rep, 1))
	var back reaper.Report
	require.NoError(t, json.Unmarshal(b.Bytes(), &back))
	require.Len(t, back.Findings, 2, "JSON is always complete")

	b.Reset()
	require.NoError(t, writeReport(&b, "text", &reaper.Report{Mode: reaper.ModeAudit, Error: "read owner registry: connection refused"}, 0))
	require.Contains(t, b.String(), "the pass did not complete")
	require.Contains(t, b.String(), "Nothing was released")

	b.Reset()
	require.NoError(t, writeReport(&b, "text", &reaper.Report{Mode: reaper.ModeOnce, Skipped: "another lock-reaper holds the lock"}, 0))
	require.Contains(t, b.String(), "skipped: another lock-reaper holds the lock")
}
