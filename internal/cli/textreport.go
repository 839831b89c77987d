package cli

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/lock-reaper/lock-reaper/reaper"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
	"github.com/lock-reaper/lock-reaper/reaper/pulpdb"
)

// writeTextReport prints a pass's report as text in layout l. Every string
// that came from Redis or the database goes through quoteText.
func writeTextReport(w io.Writer, rep *reaper.Report, l layout) error {
	verb := map[string]string{reaper.ModeAudit: "lock-reaper audit (dry run: nothing was written)", reaper.ModeOnce: "lock-reaper once", reaper.ModeRelease: "lock-reaper release"}[rep.Mode]
	if l.heading != "" {
		verb = l.heading
	}
	switch {
	case rep.Skipped != "":
		fmt.Fprintf(w, "%s: skipped: %s.\n", verb, rep.Skipped)
		return nil
	case rep.DBNow.IsZero():
		// Nothing was judged: say why and nothing else.
		fmt.Fprintf(w, "%s: the pass did not complete after %d ms.\nError: %s\nNothing was released and no task was updated.\n", verb, rep.DurationMS, rep.Error)
		return nil
	}
	l.line(w, "", fmt.Sprintf("%s at %s (database clock), %d ms", verb, rep.DBNow.UTC().Format(time.RFC3339), rep.DurationMS))
	scan := "full keyspace scan"
	if !rep.Scanned.FullScan {
		scan = "owner registry only"
	}
	s := rep.Scanned
	l.line(w, "", fmt.Sprintf("Read %d lock keys (%s): %d task locks, %d resource holdings, %d owners, %d tasks, %d ignored keys.",
		s.Keys, scan, s.TaskLocks, s.ResourceHoldings, s.Owners, s.Tasks, s.Ignored))
	for _, note := range rep.Notes {
		fmt.Fprintln(w)
		l.line(w, "", "Note: "+note)
	}

	if len(rep.LockOwners) > 0 {
		fmt.Fprintln(w, "\nOwners holding locks")
		writeOwners(w, rep.LockOwners, l)
	}
	writeKubernetes(w, rep.Kubernetes)
	if len(rep.Findings) > 0 {
		if l.grouped {
			writeGroupedFindings(w, rep.Findings, l)
		} else {
			writeFlatFindings(w, rep.Findings, l)
		}
	}
	if len(rep.Tasks) > 0 {
		fmt.Fprintln(w, "\nTasks lost, orphaned or stuck")
		writeTaskFindings(w, rep.Tasks, l)
	}
	if len(rep.Ignored) > 0 {
		fmt.Fprintln(w, "\nIgnored keys (not Pulp locks; never touched)")
		t := &table{indent: "  ", header: []string{"KEY", "TYPE", "WHY"}}
		for _, ig := range rep.Ignored[:shown(len(rep.Ignored), l.limit)] {
			t.add(keyCell(quoteText(ig.Key)), textCell(quoteText(ig.Type)), freeCell(ig.Reason))
		}
		t.write(w, l)
		moreLine(w, "  ", len(rep.Ignored)-shown(len(rep.Ignored), l.limit))
	}
	for _, g := range rep.Guards {
		fmt.Fprintln(w)
		l.line(w, "", fmt.Sprintf("Guard %s: %s", g.Name, quoteText(g.Reason)))
	}
	fmt.Fprintln(w)
	for _, line := range strings.Split("Summary: "+summaryText(rep), "\n") {
		l.line(w, "", line)
	}
	if rep.Error != "" {
		l.line(w, "", "The pass did not complete: "+rep.Error)
	}
	return nil
}

// writeOwners prints the owners table, the dead first, as they are what
// the reader looks for; on a terminal and piped alike.
func writeOwners(w io.Writer, owners []reaper.OwnerReport, l layout) {
	list := append([]reaper.OwnerReport(nil), owners...)
	sort.SliceStable(list, func(a, b int) bool { return livenessRank(list[a].Liveness) < livenessRank(list[b].Liveness) })
	t := &table{indent: "  ", header: []string{"OWNER", "LIVENESS", "HEARTBEAT AGE", "HOLDINGS"}}
	for _, o := range list[:shown(len(list), l.limit)] {
		t.add(keyCell(quoteText(o.Name)), textCell(o.Liveness+podText(o.Kubernetes)).in(livenessColor(o.Liveness)), textCell(ageOrDash(o.HeartbeatAge)), textCell(fmt.Sprint(o.Holdings)))
	}
	t.write(w, l)
	moreLine(w, "  ", len(list)-shown(len(list), l.limit))
}

func livenessRank(l string) int {
	switch l {
	case "dead":
		return 0
	case "gone":
		return 1
	case "late":
		return 2
	}
	return 3
}

func livenessColor(l string) string {
	switch l {
	case "dead":
		return ansiRed
	case "gone", "late":
		return ansiYellow
	}
	return ansiGreen
}

// writeFlatFindings is the piped layout: one row per finding, every column
// complete, most severe first as on a terminal (mostSevereFirst).
func writeFlatFindings(w io.Writer, findings []reaper.Finding, l layout) {
	fmt.Fprintln(w, "\nFindings (holdings that are not healthy), most severe first")
	t := &table{indent: "  ", header: []string{"KEY", "KIND", "OWNER", "VERDICT", "RESULT", "EVIDENCE"}, drop: []int{5, 1}}
	order := severeOrder(len(findings), func(i int) orderKey { return findingOrder(&findings[i]) })
	t.each = func(emit func(...cell)) {
		for _, i := range order[:shown(len(order), l.limit)] {
			f := &findings[i]
			emit(keyCell(quoteText(f.Key)), textCell(f.Kind.String()), keyCell(quoteText(f.Owner)),
				textCell(f.Verdict.String()).in(verdictColor(f.Verdict)), textCell(resultText(f.Result, f.Deferred)), freeCell(evidenceText(*f)))
		}
	}
	t.write(w, l)
	moreLine(w, "  ", len(findings)-shown(len(findings), l.limit))
}

// findingGroup is the findings of one owner with one verdict.
type findingGroup struct {
	owner    string
	liveness string
	verdict  judge.Verdict
	rows     []reaper.Finding
}

// groupFindings groups by owner and verdict, in the order of
// mostSevereFirst: an owner's groups together, the most severe first.
func groupFindings(findings []reaper.Finding) []findingGroup {
	rows := append([]reaper.Finding(nil), findings...)
	mostSevereFirst(rows, findingOrder)
	var out []findingGroup
	for i := 0; i < len(rows); {
		j := i + 1
		for j < len(rows) && rows[j].Owner == rows[i].Owner && rows[j].Verdict == rows[i].Verdict {
			j++
		}
		out = append(out, findingGroup{owner: rows[i].Owner, liveness: rows[i].Evidence().OwnerLiveness.String(), verdict: rows[i].Verdict, rows: rows[i:j:j]})
		i = j
	}
	return out
}

// minGroupRows is how many rows every group shows, whatever the limit has
// left: a group is never only a count.
const minGroupRows = 3

// writeGroupedFindings is the terminal layout: per owner, per verdict, a
// count, what the pass does about them, and the first rows.
func writeGroupedFindings(w io.Writer, findings []reaper.Finding, l layout) {
	groups := groupFindings(findings)
	owners := map[string]bool{}
	for _, g := range groups {
		owners[g.owner] = true
	}
	fmt.Fprintln(w)
	l.line(w, "", fmt.Sprintf("Findings: %d %s that %s not healthy, of %d %s, most severe first", len(findings),
		plural(len(findings), "holding", "holdings"), plural(len(findings), "is", "are"), len(owners), plural(len(owners), "owner", "owners")))
	budget := l.limit
	owner := ""
	for gi, g := range groups {
		if g.owner != owner || gi == 0 {
			owner = g.owner
			name := quoteText(g.owner) // in full: it is copied into release --owner
			fmt.Fprintf(w, "\n  %s (%s)\n", name, l.paint(g.liveness, livenessColor(g.liveness)))
		}
		fmt.Fprintf(w, "    %s: %d %s, %s\n", l.paint(g.verdict.String(), verdictColor(g.verdict)), len(g.rows), plural(len(g.rows), "holding", "holdings"), resultsText(g.rows))
		n := len(g.rows)
		if l.limit > 0 {
			n = min(n, max(budget, minGroupRows))
			budget = max(0, budget-n)
		}
		// The header already says the result when all rows share it.
		oneResult := !strings.Contains(resultsText(g.rows), ",")
		t := &table{indent: "      ", header: []string{"KEY", "KIND", "TASK", "RESULT", "DETAIL"}, drop: []int{4, 1}}
		for _, f := range g.rows[:n] {
			t.add(keyCell(quoteText(f.Key)), textCell(f.Kind.String()), keyCell(taskText(f)), freeCell(resultText(f.Result, f.Deferred)), freeCell(detailText(f)))
		}
		if !hasDetail(g.rows[:n]) {
			t.remove(4)
		}
		if oneResult {
			t.remove(3)
		}
		t.write(w, l)
		moreLine(w, "      ", len(g.rows)-n)
	}
}

// resultsText sums up a group's results: "would-release 36".
func resultsText(rows []reaper.Finding) string {
	counts := map[string]int{}
	var order []string
	for _, f := range rows {
		r := resultText(f.Result, f.Deferred)
		if counts[r] == 0 {
			order = append(order, r)
		}
		counts[r]++
	}
	parts := make([]string, len(order))
	for i, r := range order {
		parts[i] = fmt.Sprintf("%s %d", r, counts[r])
	}
	return strings.Join(parts, ", ")
}

// taskText is the state of the task a holding is held for, without its id
// when the key already shows it.
func taskText(f reaper.Finding) string {
	e := f.Evidence()
	state := e.TaskState
	switch {
	case state == "" && f.Kind == judge.KindTask:
		return "no task row"
	case state == "":
		return "-"
	case e.FinishedAge != nil:
		state += " " + reaper.SecondsOf(e.FinishedAge).String() + " ago"
	}
	if id := findingTask(f); f.Kind != judge.KindTask && id != "" {
		return id + " " + state // whole: it is copied into explain
	}
	return state
}

func hasDetail(rows []reaper.Finding) bool {
	for _, f := range rows {
		if detailText(f) != "-" {
			return true
		}
	}
	return false
}

// detailText is the evidence the group header does not already say.
func detailText(f reaper.Finding) string {
	e := f.Evidence()
	var parts []string
	if e.AppLock != "" && e.AppLockLiveness != nil && e.AppLock != f.Owner {
		parts = append(parts, "claimed by "+quoteText(e.AppLock)+" ("+e.AppLockLiveness.String()+")")
	}
	if e.Via != "" && f.Kind != judge.KindTask && findingTask(f) == "" {
		parts = append(parts, "via "+quoteText(e.Via))
	}
	if f.FirstSeen != nil {
		parts = append(parts, "suspect since "+f.FirstSeen.UTC().Format(time.RFC3339))
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, "; ")
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// writeTaskFindings prints the tasks a pass handles, the running ones of
// dead workers first; on a terminal and piped alike.
func writeTaskFindings(w io.Writer, tasks []reaper.TaskFinding, l layout) {
	list := append([]reaper.TaskFinding(nil), tasks...)
	sort.SliceStable(list, func(a, b int) bool { return severityOf(list[a].Verdict) < severityOf(list[b].Verdict) })
	t := &table{indent: "  ", header: []string{"TASK", "NAME", "VERDICT", "STATE", "AFTER", "WORKER", "RESULT"}, drop: []int{1, 5, 4, 3}}
	t.each = func(emit func(...cell)) {
		for _, tf := range list[:shown(len(list), l.limit)] {
			after := tf.StateAfter
			if tf.ClearClaim {
				after = "waiting (requeued)"
			}
			emit(keyCell(tf.ID), freeCell(quoteText(tf.Name)), textCell(tf.Verdict.String()).in(verdictColor(tf.Verdict)),
				textCell(quoteText(tf.StateBefore)), textCell(quoteText(after)), keyCell(quoteText(tf.Owner)), freeCell(resultText(tf.Result, tf.Deferred)))
		}
	}
	t.write(w, l)
	moreLine(w, "  ", len(list)-shown(len(list), l.limit))
	// A stranded task's row cannot say what it waits for: a line of its own does.
	for _, tf := range list[:shown(len(list), l.limit)] {
		if tf.Stranded != nil {
			fmt.Fprintf(w, "  %s %s\n", tf.ID, quoteText(tf.Stranded.String()))
		}
		// Nor can a claimed-not-started task's say whose restart frees it.
		if tf.Verdict == judge.VerdictClaimedNotStarted {
			fmt.Fprintf(w, "  %s %s\n", tf.ID, quoteText(pulpdb.ClaimedNotStartedWords(tf.Owner, tf.NotStartedFor)))
		}
	}
}

// writePassReport prints a pass's report on the command's stdout: JSON as
// writeReport makes it, text in the layout stdout calls for, under heading
// when it is set.
func writePassReport(env Env, format string, rep *reaper.Report, limit *limitValue, heading string) error {
	if isJSON(format) {
		return writeReport(env.Stdout, format, rep, 0)
	}
	l := layoutFor(env.Stdout, envLookup(env), limit)
	if env.textLayout != nil {
		l = *env.textLayout
	}
	l.heading = heading
	return writeTextReport(env.Stdout, rep, l)
}

// findingTask is the task a holding is held for: the task of a task lock,
// or the task lock a resource holding inherited its verdict from.
func findingTask(f reaper.Finding) string {
	if f.Kind == judge.KindTask {
		return f.TaskID()
	}
	return strings.TrimPrefix(f.Evidence().Via, "task:")
}
