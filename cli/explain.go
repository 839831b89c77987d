package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/lock-reaper/lock-reaper/config"
	"github.com/lock-reaper/lock-reaper/reaper"
)

func init() {
	register("explain", "explain why a task waits, runs or was lost (read-only)", runExplain)
}

// runExplain reads one snapshot, as a pass does but writing nothing, and
// explains one task. Exit 0, 1 when the task does not exist or the read
// failed, 2 on usage errors.
func runExplain(ctx context.Context, env Env, args []string) int {
	fs := flag.NewFlagSet("explain", flag.ContinueOnError)
	loader := config.Register(fs)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: lock-reaper explain TASK_ID [flags]")
		fs.PrintDefaults()
	}
	limit := fs.Int("limit", 10, "text output: at most this many older tasks (0: all that were read)")
	taskID, code, ok := parseWithPositional(fs, env, args, "TASK_ID")
	if !ok {
		return code
	}
	taskID = strings.ToLower(taskID)
	if !reaper.IsTaskUUID(taskID) {
		fmt.Fprintf(env.Stderr, "lock-reaper explain: %q is not a task UUID\n", taskID)
		return reaper.ExitUsage
	}
	r, s, code, ok := newReaper(fs, loader, env, false)
	if !ok {
		return code
	}
	defer s.close()
	progress := newProgress(env.Stderr, s.cfg.Log.Format)
	in, err := r.Inspect(ctx, reaper.InspectOptions{TaskID: taskID, Progress: progress.keys})
	progress.done()
	if err != nil {
		fmt.Fprintf(env.Stderr, "lock-reaper explain: %v\n", err)
		return reaper.ExitFailed
	}
	ex := reaper.Explain(in, taskID)
	if err := writeExplanation(env.Stdout, s.cfg.Output, ex, *limit); err != nil {
		return reaper.ExitFailed
	}
	if ex.Status == reaper.StatusNotFound {
		return reaper.ExitFailed
	}
	return reaper.ExitOK
}

// parseWithPositional parses flags on either side of one required
// positional argument (`explain ID --output json` and `explain --output json
// ID` both work).
func parseWithPositional(fs *flag.FlagSet, env Env, args []string, name string) (string, int, bool) {
	fs.SetOutput(env.Stderr)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return "", reaper.ExitOK, false
		}
		return "", reaper.ExitUsage, false
	}
	if fs.NArg() == 0 {
		fmt.Fprintf(env.Stderr, "lock-reaper %s: missing %s\n", fs.Name(), name)
		fs.Usage()
		return "", reaper.ExitUsage, false
	}
	arg := fs.Arg(0)
	if code, ok := parseFlags(fs, env, fs.Args()[1:], 0); !ok {
		return "", code, false
	}
	return arg, 0, true
}

// writeExplanation prints the explanation as text, with at most limit older
// tasks (0: all), or as one complete JSON document.
func writeExplanation(w io.Writer, format string, ex reaper.Explanation, limit int) error {
	if format == "json" {
		return writeJSON(w, ex)
	}
	writeExplanationText(w, ex, limit)
	return nil
}

func writeExplanationText(w io.Writer, ex reaper.Explanation, limit int) {
	fmt.Fprintf(w, "Task %s at %s (database clock)\n", ex.TaskID, ex.DBNow.UTC().Format(time.RFC3339))
	if t := ex.Task; t != nil {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintf(tw, "  name\t%s\n", t.Name)
		state := t.State
		if !t.Created.IsZero() {
			state += fmt.Sprintf(", created %s (%s ago)", t.Created.UTC().Format(time.RFC3339), ageText(ex.DBNow.Sub(t.Created)))
		}
		if t.FinishedAt != nil {
			state += fmt.Sprintf(", finished %s ago", ageText(ex.DBNow.Sub(*t.FinishedAt)))
		}
		fmt.Fprintf(tw, "  state\t%s\n", state)
		fmt.Fprintf(tw, "  claim\t%s\n", claimText(ex.Claim))
		if tj := ex.TaskVerdict; tj != nil {
			fmt.Fprintf(tw, "  task verdict\t%s: %s -> %s%s\n", tj.Verdict, tj.StateBefore, afterText(tj), deferredText(tj.Deferred))
		}
		tw.Flush()
	}
	fmt.Fprintln(w, "\nTask lock")
	if len(ex.TaskLocks) == 0 {
		fmt.Fprintf(w, "  task:%s is not held\n", ex.TaskID)
	}
	writeHolders(w, ex.TaskLocks)
	if len(ex.Resources) > 0 {
		fmt.Fprintln(w, "\nReserved resources")
		for _, rn := range ex.Resources {
			fmt.Fprintf(w, "  %s (%s)\n", rn.Resource, rn.Need)
			if len(rn.Holders) == 0 {
				fmt.Fprintln(w, "    not held")
			}
			writeHolders(w, rn.Holders)
		}
	}
	if len(ex.Ahead) > 0 {
		fmt.Fprintf(w, "\nOlder tasks that need the same resources and go first (%d)\n", ex.AheadTotal)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  TASK\tNAME\tSTATE\tCREATED\tCLAIM\tCONFLICTS ON")
		for _, a := range ex.Ahead[:shown(len(ex.Ahead), limit)] {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\n", a.ID, a.Name, a.State, a.Created.UTC().Format(time.RFC3339), claimText(a.Claim), strings.Join(a.Conflicts, ", "))
		}
		tw.Flush()
		if n := ex.AheadTotal - shown(len(ex.Ahead), limit); n > 0 {
			fmt.Fprintf(w, "  … and %d more (--limit 0 shows the first %d, --output json lists them)\n", n, reaper.MaxAhead)
		}
	}
	fmt.Fprintf(w, "\nConclusion: %s\n", ex.Conclusion)
}

func writeHolders(w io.Writer, hs []reaper.Holder) {
	if len(hs) == 0 {
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
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
				task += " (" + h.Task.State + ")"
			}
		}
		mark := ""
		if h.Blocks {
			mark = "\tBLOCKS"
		}
		fmt.Fprintf(tw, "    %s\t%s\t%s\t%s\t%s -> %s%s%s\n", h.Kind, h.Owner, livenessText(h.Liveness.String(), h.HeartbeatAge)+podText(h.Kubernetes), task,
			h.Verdict, h.Action, deferredText(h.Deferred), mark)
	}
	tw.Flush()
}

func claimText(p *reaper.Process) string {
	if p == nil {
		return "none"
	}
	if p.Name == "" {
		return fmt.Sprintf("AppStatus row %s (gone)", p.AppLockID)
	}
	return fmt.Sprintf("%s %s (%s)", p.AppType, p.Name, livenessText(p.Liveness.String(), p.HeartbeatAge))
}

func livenessText(liveness string, age *reaper.Duration) string {
	if age == nil {
		return liveness
	}
	return liveness + ", heartbeat " + age.String() + " ago"
}

func afterText(tj *reaper.TaskJudgement) string {
	if tj.ClearClaim {
		return "waiting (requeued)"
	}
	return tj.StateAfter
}

func deferredText(d string) string {
	if d == "" {
		return ""
	}
	return " (deferred: " + d + ")"
}

// ageText rounds an age for reading: to the second, or the millisecond below
// a second.
func ageText(d time.Duration) string {
	if d < time.Second && d > -time.Second {
		return d.Round(time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}
