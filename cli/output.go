package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/lock-reaper/lock-reaper/reaper"
)

// writeReport prints the report as text or as one JSON document. limit
// bounds the rows of each text table (0: all); JSON is always complete.
func writeReport(w io.Writer, format string, rep *reaper.Report, limit int) error {
	if format == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	return writeText(w, rep, limit)
}

// shown returns how many of n rows a table prints.
func shown(n, limit int) int {
	if limit > 0 && n > limit {
		return limit
	}
	return n
}

func writeMore(w io.Writer, n, limit int) {
	if rest := n - shown(n, limit); rest > 0 {
		fmt.Fprintf(w, "  … and %d more (--limit 0 shows all, --output json gives everything)\n", rest)
	}
}

func writeText(w io.Writer, rep *reaper.Report, limit int) error {
	verb := map[string]string{reaper.ModeAudit: "lock-reaper audit (dry run: nothing was written)", reaper.ModeOnce: "lock-reaper once", reaper.ModeRelease: "lock-reaper release"}[rep.Mode]
	switch {
	case rep.Skipped != "":
		fmt.Fprintf(w, "%s: skipped: %s.\n", verb, rep.Skipped)
		return nil
	case rep.DBNow.IsZero():
		// Nothing was judged: say why and nothing else.
		fmt.Fprintf(w, "%s: the pass did not complete after %d ms.\nError: %s\nNothing was released and no task was updated.\n", verb, rep.DurationMS, rep.Error)
		return nil
	}
	fmt.Fprintf(w, "%s at %s (database clock), %d ms\n", verb, rep.DBNow.UTC().Format(time.RFC3339), rep.DurationMS)
	scan := "full keyspace scan"
	if !rep.Scanned.FullScan {
		scan = "owner registry only"
	}
	s := rep.Scanned
	fmt.Fprintf(w, "Read %d lock keys (%s): %d task locks, %d resource holdings, %d owners, %d tasks, %d ignored keys.\n",
		s.Keys, scan, s.TaskLocks, s.ResourceHoldings, s.Owners, s.Tasks, s.Ignored)

	if len(rep.Owners) > 0 {
		fmt.Fprintln(w, "\nOwners holding locks")
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  OWNER\tLIVENESS\tHEARTBEAT AGE\tHOLDINGS")
		for _, o := range rep.Owners {
			age := "-"
			if o.HeartbeatAge != nil {
				age = o.HeartbeatAge.String()
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%d\n", o.Name, o.Liveness+podText(o.Kubernetes), age, o.Holdings)
		}
		tw.Flush()
	}
	writeKubernetes(w, rep.Kubernetes)
	if len(rep.Findings) > 0 {
		fmt.Fprintln(w, "\nFindings (holdings that are not healthy)")
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  KEY\tKIND\tOWNER\tVERDICT\tRESULT\tEVIDENCE")
		for _, f := range rep.Findings[:shown(len(rep.Findings), limit)] {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\n", f.Key, f.Kind, f.Owner, f.Verdict, resultText(f.Result, f.Deferred), evidenceText(f))
		}
		tw.Flush()
		writeMore(w, len(rep.Findings), limit)
	}
	if len(rep.Tasks) > 0 {
		fmt.Fprintln(w, "\nTasks lost, orphaned or stuck")
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  TASK\tNAME\tVERDICT\tSTATE\tAFTER\tWORKER\tRESULT")
		for _, t := range rep.Tasks[:shown(len(rep.Tasks), limit)] {
			after := t.StateAfter
			if t.Requeue {
				after = "waiting (requeued)"
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t%s\n", t.ID, t.Name, t.Verdict, t.StateBefore, after, t.Owner, resultText(t.Result, t.Deferred))
		}
		tw.Flush()
		writeMore(w, len(rep.Tasks), limit)
	}
	if len(rep.Ignored) > 0 {
		fmt.Fprintln(w, "\nIgnored keys (not Pulp locks; never touched)")
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  KEY\tTYPE\tWHY")
		for _, ig := range rep.Ignored[:shown(len(rep.Ignored), limit)] {
			fmt.Fprintf(tw, "  %q\t%s\t%s\n", ig.Key, ig.Type, ig.Reason)
		}
		tw.Flush()
		writeMore(w, len(rep.Ignored), limit)
	}
	for _, g := range rep.Guards {
		fmt.Fprintf(w, "\nGuard %s: %s\n", g.Name, g.Reason)
	}
	fmt.Fprintf(w, "\nSummary: %s\n", summaryText(rep))
	if rep.Error != "" {
		fmt.Fprintf(w, "The pass did not complete: %s\n", rep.Error)
	}
	return nil
}

func resultText(r reaper.Result, deferred string) string {
	if deferred != "" {
		return string(r) + " (" + deferred + ")"
	}
	return string(r)
}

func evidenceText(f reaper.Finding) string {
	e := f.Evidence
	parts := []string{"owner " + e.OwnerLiveness.String()}
	if e.HeartbeatAge != nil {
		parts[0] += " (heartbeat " + e.HeartbeatAge.String() + " ago)"
	}
	switch {
	case e.TaskState != "":
		t := "task " + e.TaskState
		if e.FinishedAge != nil {
			t += " " + e.FinishedAge.String() + " ago"
		}
		parts = append(parts, t)
	case f.Kind == reaper.KindTask:
		parts = append(parts, "no task row")
	}
	if e.AppLock != "" && e.AppLockLiveness != nil {
		parts = append(parts, "claimed by "+e.AppLock+" ("+e.AppLockLiveness.String()+")")
	}
	if e.Via != "" {
		parts = append(parts, "via "+e.Via)
	}
	if f.FirstSeen != nil {
		parts = append(parts, "suspect since "+f.FirstSeen.UTC().Format(time.RFC3339))
	}
	return strings.Join(parts, "; ")
}

func summaryText(rep *reaper.Report) string {
	s := rep.Summary
	var b strings.Builder
	released, wouldRelease := s.FindingsByResult[reaper.ResultReleased], s.FindingsByResult[reaper.ResultWouldRelease]
	if rep.Mode == reaper.ModeAudit {
		fmt.Fprintf(&b, "would release %d holdings", wouldRelease)
	} else {
		fmt.Fprintf(&b, "released %d holdings", released)
		if n := s.FindingsByResult[reaper.ResultAlreadyGone] + s.FindingsByResult[reaper.ResultOwnerChanged]; n > 0 {
			fmt.Fprintf(&b, " (%d already gone or re-owned, left alone)", n)
		}
	}
	fmt.Fprintf(&b, "; %d suspects awaiting confirmation", s.Suspects)
	tasks := s.TasksByResult[reaper.ResultUpdated]
	if rep.Mode == reaper.ModeAudit {
		tasks = s.TasksByResult[reaper.ResultWouldUpdate]
		fmt.Fprintf(&b, "; would update %d tasks", tasks)
	} else {
		fmt.Fprintf(&b, "; updated %d tasks", tasks)
		if n := s.TasksByResult[reaper.ResultSkipped]; n > 0 {
			fmt.Fprintf(&b, " (%d skipped: changed meanwhile)", n)
		}
	}
	if s.Deferred > 0 {
		fmt.Fprintf(&b, "; %d deferred to the next pass", s.Deferred)
	}
	fmt.Fprintf(&b, ".\nBy verdict: %s.", countsText(s.HoldingsByVerdict))
	return b.String()
}

func countsText(m map[reaper.Verdict]int) string {
	if len(m) == 0 {
		return "no holdings"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, string(k))
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, m[reaper.Verdict(k)])
	}
	return strings.Join(parts, ", ")
}
