package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"

	"github.com/lock-reaper/lock-reaper/internal/config"
	"github.com/lock-reaper/lock-reaper/internal/exitcode"
	"github.com/lock-reaper/lock-reaper/internal/explain"
	"github.com/lock-reaper/lock-reaper/reaper"
	"github.com/lock-reaper/lock-reaper/reaper/pulpdb"
)

func init() {
	registerCommand("explain", command{
		summary: "explain why a task waits, runs or was lost, and what the next pass does about it (read-only)",
		args:    "TASK (a UUID, /pulp/api/v3/tasks/UUID/, /pulp/DOMAIN/api/v3/tasks/UUID/ or prn:core.task:UUID)",
		keys:    readKeys, run: runExplain,
		exits: []exitCode{{0, "explained"}, {1, "no such task, or Redis or PostgreSQL could not be read"},
			{2, usageOrConfig}},
	})
}

// runExplain reads one snapshot, as a pass does but writing nothing, and
// explains one task. Exit 0, 1 when the task does not exist or the read
// failed, 2 on usage errors.
func runExplain(ctx context.Context, env Env, args []string) int {
	fs := flag.NewFlagSet("explain", flag.ContinueOnError)
	loader := config.Register(fs)
	limit := limitFlagNoting(fs, fmt.Sprintf(". The older tasks that go first are read %d at most: "+
		"--limit 0 shows those, and the table says how many more there are", pulpdb.MaxAhead))
	taskID, code, ok := parseWithPositional(fs, env, args, "TASK_ID")
	if !ok {
		return code
	}
	taskID, err := taskIDOf(taskID)
	if err != nil {
		fmt.Fprintf(env.Stderr, "lock-reaper explain: %v\n", err)
		return exitcode.Usage
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
		f := s.failed(err)
		fmt.Fprintf(env.Stderr, "lock-reaper explain: %s\n", f.message)
		return failureCode(f)
	}
	ex := explain.Explain(in, taskID)
	if err := writeExplanation(env.Stdout, s.cfg.Output, ex, layoutFor(env.Stdout, envLookup(env), limit)); err != nil {
		return exitcode.Failed
	}
	if ex.Status == explain.StatusNotFound {
		return exitcode.Failed
	}
	return exitcode.OK
}

// parseWithPositional parses flags on either side of one required
// positional argument (`explain ID --output json` and `explain --output json
// ID` both work).
func parseWithPositional(fs *flag.FlagSet, env Env, args []string, name string) (string, int, bool) {
	if env.flagSets != nil {
		env.flagSets(fs)
		return "", exitcode.OK, false
	}
	if err := parseArgs(fs, env, args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			writeHelp(env.Stdout, fs.Name(), fs)
			return "", exitcode.OK, false
		}
		fmt.Fprintf(env.Stderr, "Run 'lock-reaper %s -h' for its flags.\n", fs.Name())
		return "", exitcode.Usage, false
	}
	if fs.NArg() == 0 {
		fmt.Fprintf(env.Stderr, "lock-reaper %s: missing %s\nUsage: lock-reaper %s %s [flags]; 'lock-reaper %s -h' for help.\n",
			fs.Name(), name, fs.Name(), name, fs.Name())
		return "", exitcode.Usage, false
	}
	arg := fs.Arg(0)
	if code, ok := parseFlags(fs, env, fs.Args()[1:], 0); !ok {
		return "", code, false
	}
	return arg, 0, true
}

func claimText(p *explain.Process) string {
	if p == nil {
		return "none"
	}
	if p.Name == "" {
		return fmt.Sprintf("AppStatus row %s (gone)", quoteText(p.AppLockID))
	}
	return fmt.Sprintf("%s %s (%s)", quoteText(p.AppType), quoteText(p.Name), livenessText(p.Liveness.String(), p.HeartbeatAge))
}

func livenessText(liveness string, age *reaper.Seconds) string {
	if age == nil {
		return liveness
	}
	return liveness + ", heartbeat " + age.String() + " ago"
}

func afterText(tj *reaper.TaskVerdict) string {
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
