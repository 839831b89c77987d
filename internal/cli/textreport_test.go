package cli

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/heartbeat"
	"github.com/lock-reaper/lock-reaper/internal/sim"
	"github.com/lock-reaper/lock-reaper/internal/testing/passtest"
	"github.com/lock-reaper/lock-reaper/reaper"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden files of the text layout")

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *updateGolden {
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test ./cli -run Golden -update to create it")
	require.Equal(t, string(want), got)
}

// incidentReport is a small picture of 2026-07-24: a dead worker holding
// running tasks' locks, a blocking exclusive repository lock and many
// finished tasks' leftovers, beside a live worker.
func incidentReport() *reaper.Report {
	now := goldenNow
	day, fresh := judge.Duration(sim.DefaultDeadHeartbeatAge), judge.Duration(4*time.Second)
	dead := heartbeat.Dead
	rep := &reaper.Report{
		Mode: reaper.ModeAudit, DBNow: now, DurationMS: 412,
		Scanned: reaper.Scanned{Keys: 1100, TaskLocks: 560, ResourceHoldings: 540, Owners: 3, Tasks: 600, FullScan: true},
		LockOwners: []reaper.OwnerReport{
			{Name: "1@pulp-worker-7f9c", Liveness: "alive", HeartbeatAge: reaper.SecondsOf(&fresh), Holdings: 6},
			{Name: goldenOwner, Liveness: "dead", HeartbeatAge: reaper.SecondsOf(&day), Holdings: 1067},
		},
	}
	add := func(f reaper.Finding) {
		e := f.Evidence()
		e.OwnerLiveness, e.HeartbeatAge = heartbeat.Dead, &day
		f.SetEvidence(e)
		f.Owner = goldenOwner
		rep.Findings = append(rep.Findings, f)
	}
	for i := 0; i < 6; i++ {
		fin := judge.Duration(time.Duration(20+i) * time.Hour)
		add(reaper.Finding{Judgement: new(passtest.WithEvidence(judge.Judgement{Holding: judge.Holding{Key: fmt.Sprintf("task:0000000%d-aaaa-4bbb-8ccc-dddddddddddd", i), Kind: judge.KindTask}, Verdict: judge.VerdictTaskFinished}, judge.Evidence{TaskState: "completed", FinishedAge: &fin})), Result: reaper.ResultWouldRelease})
	}
	for i := 0; i < 4; i++ {
		id := fmt.Sprintf("9000000%d-aaaa-4bbb-8ccc-dddddddddddd", i)
		add(reaper.Finding{Judgement: new(passtest.WithEvidence(judge.Judgement{Holding: judge.Holding{Key: "task:" + id, Kind: judge.KindTask}, Verdict: judge.VerdictOwnerDead}, judge.Evidence{TaskState: "running", AppLock: goldenOwner, AppLockLiveness: &dead})), Result: reaper.ResultWouldRelease})
	}
	add(reaper.Finding{Judgement: new(passtest.WithEvidence(judge.Judgement{Holding: judge.Holding{Key: "pulp:resource_lock:prn:rpm.rpmrepository:0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b", Kind: judge.KindExclusive}, Verdict: judge.VerdictOwnerDead}, judge.Evidence{TaskState: "running", Via: "task:90000000-aaaa-4bbb-8ccc-dddddddddddd"})), Result: reaper.ResultWouldRelease})
	rep.Tasks = []reaper.TaskFinding{
		{TaskJudgement: &judge.TaskJudgement{ID: "90000000-aaaa-4bbb-8ccc-dddddddddddd", Name: "pulp_rpm.app.tasks.synchronizing.synchronize", Verdict: judge.VerdictLost, Owner: goldenOwner, StateBefore: "running", StateAfter: "canceled"}, Result: reaper.ResultWouldUpdate},
	}
	rep.Summary = reaper.Summary{
		FindingsByResult:  map[reaper.Result]int{reaper.ResultWouldRelease: len(rep.Findings)},
		TasksByResult:     map[reaper.Result]int{reaper.ResultWouldUpdate: 1},
		HoldingsByVerdict: map[judge.Verdict]int{judge.VerdictOwnerDead: 5, judge.VerdictTaskFinished: 6, judge.VerdictHealthy: 6},
	}
	return rep
}

func TestGoldenTextReport(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		l    layout
	}{
		{"report-piped.txt", layout{}},
		{"report-terminal-80.txt", layout{width: 80, grouped: true, limit: 8}},
		{"report-terminal-120.txt", layout{width: 120, grouped: true, limit: 20}},
		{"report-terminal-50.txt", layout{width: 50, grouped: true, limit: 20}},
	} {
		var b bytes.Buffer
		require.NoError(t, writeTextReport(&b, incidentReport(), c.l))
		golden(t, c.name, b.String())
		requireFitsWidth(t, c.name, b.String(), c.l.width)
		require.NotContains(t, b.String(), "\x1b[", "no colour without a colour layout")
	}
}

// On a terminal and piped alike the dead worker's running tasks come before
// its finished tasks' leftovers, and the limit says what it left out.
func TestTerminalReportPutsTheMostSevereFirst(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	require.NoError(t, writeTextReport(&b, incidentReport(), layout{width: 100, grouped: true, limit: 4}))
	out := b.String()
	require.Less(t, strings.Index(out, "owner-dead: 5 holdings"), strings.Index(out, "task-finished: 6 holdings"))
	require.Less(t, strings.Index(out, "Owners holding locks"), strings.Index(out, "Findings:"))
	require.Contains(t, out, "… and 3 more (--limit 0 shows all, --output json gives everything)")
	// Piped: every row, none cut.
	b.Reset()
	require.NoError(t, writeTextReport(&b, incidentReport(), layout{}))
	require.Equal(t, len(incidentReport().Findings), strings.Count(b.String(), goldenOwner+"  owner-dead")+strings.Count(b.String(), goldenOwner+"  task-finished"))
	require.NotContains(t, b.String(), "…")
	piped := b.String()
	require.Less(t, strings.Index(piped, goldenOwner+"  dead"), strings.Index(piped, "1@pulp-worker-7f9c "), "the dead owner first")
	require.Less(t, strings.LastIndex(piped, goldenOwner+"  owner-dead"), strings.Index(piped, goldenOwner+"  task-finished"),
		"every running task's lock before the leftovers")

	// Piped with a limit, the rows shown are the most severe.
	b.Reset()
	require.NoError(t, writeTextReport(&b, incidentReport(), layout{limit: 5}))
	require.Equal(t, 5, strings.Count(b.String(), goldenOwner+"  owner-dead"), b.String())
	require.NotContains(t, b.String(), goldenOwner+"  task-finished")
}

// requireFitsWidth checks that no line is shortened and that every line
// fits width (when set) but for one identifier, never cut, at its end.
func requireFitsWidth(t *testing.T, name, text string, width int) {
	t.Helper()
	for _, line := range strings.Split(text, "\n") {
		if strings.Contains(line, "… and ") {
			continue
		}
		require.NotContains(t, line, "…", "%s: nothing is shortened: %q", name, line)
		if width > 0 && runeLen(line) > width {
			f := strings.Fields(line)
			require.LessOrEqual(t, runeLen(line)-runeLen(f[len(f)-1]), width,
				"%s: only an identifier alone at the end of a line may pass %d columns: %q", name, width, line)
		}
	}
}
