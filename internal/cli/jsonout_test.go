package cli

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/heartbeat"
	"github.com/lock-reaper/lock-reaper/internal/testing/passtest"
	"github.com/lock-reaper/lock-reaper/reaper"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
)

// richReport has a member in every list the JSON report streams, and
// strings a naive splice would trip on.
func richReport() *reaper.Report {
	age := reaper.Seconds(90 * time.Minute)
	seen := time.Date(2026, 7, 24, 9, 58, 0, 0, time.UTC)
	return &reaper.Report{
		Mode: reaper.ModeOnce, StartedAt: seen, DurationMS: 1234, DBNow: time.Date(2026, 7, 24, 10, 0, 0, 0, time.UTC),
		Scanned: reaper.Scanned{Keys: 3, TaskLocks: 1, ResourceHoldings: 2, Owners: 2, Tasks: 1, FullScan: true},
		LockOwners: []reaper.OwnerReport{
			{Name: `1@w","findings":null,"x`, Liveness: "dead", HeartbeatAge: &age, Holdings: 3},
			{Name: "2@<w>&", Liveness: "alive", Holdings: 1},
		},
		Findings: []reaper.Finding{
			{Judgement: new(passtest.WithEvidence(judge.Judgement{Holding: judge.Holding{Key: "task:a", Kind: judge.KindTask, Owner: "1@w"}, Verdict: judge.VerdictOwnerDead, Action: judge.ActionRelease}, judge.Evidence{OwnerLiveness: heartbeat.Dead, HeartbeatAge: (*judge.Duration)(&age), TaskState: "running"})), Result: reaper.ResultReleased},
			{Judgement: &judge.Judgement{Holding: judge.Holding{Key: "pulp:resource_lock:r", Kind: judge.KindExclusive, Owner: "1@w"}, Verdict: judge.VerdictNoTask, Action: judge.ActionSuspect, FirstSeen: &seen}, Result: reaper.ResultSuspected},
		},
		Tasks: []reaper.TaskFinding{{TaskJudgement: &judge.TaskJudgement{ID: "a", Name: "sync", Verdict: judge.VerdictLost, Action: judge.ActionUpdate, StateBefore: "running",
			StateAfter: "canceled"}, Result: reaper.ResultUpdated}},
		Ignored: []reaper.Ignored{{Key: "task:\x1b[2J", Type: "hash", Reason: `"tasks":null`}},
		Guards:  []reaper.Guard{{Name: "max-releases", Reason: "limit"}},
		Summary: reaper.Summary{HoldingsByVerdict: map[judge.Verdict]int{judge.VerdictOwnerDead: 1, judge.VerdictNoTask: 1},
			FindingsByResult: map[reaper.Result]int{reaper.ResultReleased: 1}, Released: 1},
		Error: "partial",
	}
}

// TestJSONReportStreamsWhatEncodingJSONWrites: the streamed report is, byte
// for byte, what encoding/json writes of the whole report: on one line for
// json, indented for json-pretty; with lists full, empty or null.
func TestJSONReportStreamsWhatEncodingJSONWrites(t *testing.T) {
	t.Parallel()
	empty := &reaper.Report{Mode: reaper.ModeAudit, LockOwners: []reaper.OwnerReport{}, Findings: []reaper.Finding{}, Tasks: []reaper.TaskFinding{}}
	for name, rep := range map[string]*reaper.Report{"rich": richReport(), "empty lists": empty, "nil lists": {Mode: reaper.ModeAudit}} {
		for _, format := range []string{formatJSON, formatJSONPretty} {
			var want bytes.Buffer
			require.NoError(t, writeJSON(&want, format, rep))
			var got bytes.Buffer
			require.NoError(t, writeReport(&got, format, rep, 1), "%s %s", name, format)
			require.Equal(t, want.String(), got.String(), "%s %s", name, format)
			if format == formatJSON {
				require.Equal(t, 1, strings.Count(got.String(), "\n"), "%s: one line", name)
			}
			var back reaper.Report
			require.NoError(t, json.Unmarshal(got.Bytes(), &back))
			require.Len(t, back.Findings, len(rep.Findings), "JSON is always complete")
		}
	}
	var pretty bytes.Buffer
	require.NoError(t, writeReport(&pretty, formatJSONPretty, richReport(), 0))
	require.Contains(t, pretty.String(), "\n  \"findings\": [\n    {\n      \"key\": \"task:a\",")
}
