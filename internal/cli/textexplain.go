package cli

import (
	"fmt"
	"github.com/lock-reaper/lock-reaper/internal/humantext"
	"io"
	"strings"
	"time"

	"github.com/lock-reaper/lock-reaper/internal/explain"
	"github.com/lock-reaper/lock-reaper/reaper/pulpdb"
)

// writeExplanation prints the explanation as one complete JSON document or
// as text in layout l, with at most l.limit older tasks.
func writeExplanation(w io.Writer, format string, ex explain.Explanation, l layout) error {
	if isJSON(format) {
		return writeJSON(w, format, ex)
	}
	writeExplanationText(w, ex, l)
	return nil
}

func writeExplanationText(w io.Writer, ex explain.Explanation, l layout) {
	// The id alone on the first line, which then fits 80 columns: it is
	// what the reader checks and copies; the clock every age below is
	// measured against is the first row under it.
	fmt.Fprintf(w, "Task %s\n", ex.TaskID)
	fmt.Fprintf(w, "  %-12s  %s (database clock)\n", "as of", ex.DBNow.UTC().Format(time.RFC3339))
	if t := ex.Task; t != nil {
		state := quoteText(t.State)
		if !t.Created.IsZero() {
			state += fmt.Sprintf(", created %s (%s ago)", t.Created.UTC().Format(time.RFC3339), humantext.Short(ex.DBNow.Sub(t.Created)))
		}
		if t.FinishedAt != nil {
			state += fmt.Sprintf(", finished %s ago", humantext.Short(ex.DBNow.Sub(*t.FinishedAt)))
		}
		rows := [][2]string{{"name", quoteText(t.Name)}, {"state", state}, {"claim", claimText(ex.Claim)}}
		if tj := ex.TaskVerdict; tj != nil {
			rows = append(rows, [2]string{"task verdict", l.paint(tj.Verdict.String(), verdictColor(tj.Verdict)) +
				fmt.Sprintf(": %s -> %s%s", quoteText(tj.StateBefore), afterText(tj), deferredText(tj.Deferred))})
		}
		for _, r := range rows {
			fmt.Fprintf(w, "  %-12s  %s\n", r[0], r[1])
		}
	}
	fmt.Fprintln(w, "\nTask lock")
	if len(ex.TaskLocks) == 0 {
		fmt.Fprintf(w, "  task:%s is not held\n", ex.TaskID)
	}
	writeHolders(w, ex.TaskLocks, l)
	if len(ex.Resources) > 0 {
		fmt.Fprintln(w, "\nReserved resources")
		for _, rn := range ex.Resources {
			fmt.Fprintf(w, "  %s (%s)\n", quoteText(rn.Resource), rn.Need)
			if len(rn.Holders) == 0 {
				fmt.Fprintln(w, "    not held")
			}
			writeHolders(w, rn.Holders, l)
		}
	}
	if len(ex.Ahead) > 0 {
		fmt.Fprintf(w, "\nOlder tasks that need the same resources and go first (%d)\n", ex.AheadTotal)
		t := &table{indent: "  ", header: []string{"TASK", "NAME", "STATE", "CREATED", "CLAIM", "CONFLICTS ON"}, drop: []int{3, 1}}
		n := shown(len(ex.Ahead), l.limit)
		for _, a := range ex.Ahead[:n] {
			conflicts := make([]string, len(a.Conflicts))
			for i, c := range a.Conflicts {
				conflicts[i] = quoteText(c)
			}
			t.add(keyCell(a.ID), freeCell(quoteText(a.Name)), textCell(quoteText(a.State)), textCell(a.Created.UTC().Format(time.RFC3339)),
				freeCell(claimText(a.Claim)), keyCell(strings.Join(conflicts, ", ")))
		}
		t.write(w, l)
		aheadMore(w, l, n, len(ex.Ahead), ex.AheadTotal)
	}
	fmt.Fprintln(w)
	l.line(w, "", "Conclusion: "+quoteText(ex.Conclusion))
}

func writeHolders(w io.Writer, hs []explain.Holder, l layout) {
	if len(hs) == 0 {
		return
	}
	t := &table{indent: "    ", labels: []string{"OWNER", "KIND", "LIVENESS", "TASK", "VERDICT", ""}}
	for _, h := range hs {
		task := "-"
		if h.Task != nil {
			task = "for task " + h.Task.ID
			switch {
			case h.Own:
				task = "for this task"
			case h.Task.State == "":
				task += " (no task row)"
			default:
				task += " (" + quoteText(h.Task.State) + ")"
			}
		}
		mark := ""
		if h.Blocks {
			mark = "BLOCKS"
		}
		t.add(keyCell(quoteText(h.Owner)), textCell(h.Kind.String()), textCell(livenessText(h.Liveness.String(), h.HeartbeatAge)+podText(h.Kubernetes)),
			keyCell(task), textCell(h.Verdict.String()+" -> "+h.Action.String()+deferredText(h.Deferred)), textCell(mark).in(ansiBold))
	}
	t.write(w, l)
}

// aheadMore says what the older tasks' table leaves out, and what shows it:
// --limit 0 lifts the table's limit, but an inspection loads only the first
// pulpdb.MaxAhead of them (JSON lists those same ones; ahead_total counts
// all), so beyond those only their count is known.
func aheadMore(w io.Writer, l layout, shownRows, loaded, total int) {
	switch {
	case shownRows < loaded && loaded < total:
		l.line(w, "  ", fmt.Sprintf("… and %d more: --limit 0 shows the first %d (no more are read); ahead_total in --output json counts all %d",
			total-shownRows, loaded, total))
	case shownRows < loaded:
		moreLine(w, "  ", loaded-shownRows)
	case loaded < total:
		l.line(w, "  ", fmt.Sprintf("… and %d more, not read: at most %d are (ahead_total in --output json counts all %d)",
			total-loaded, pulpdb.MaxAhead, total))
	}
}
