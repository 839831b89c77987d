package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/lock-reaper/lock-reaper/internal/config"
	"github.com/lock-reaper/lock-reaper/internal/exitcode"
	"github.com/lock-reaper/lock-reaper/internal/explain"
	"github.com/lock-reaper/lock-reaper/reaper"
	"github.com/lock-reaper/lock-reaper/reaper/pulpdb"
)

func explainCommand() command {
	return command{
		name: "explain", summary: "explain why a task waits, runs or was lost, and what the next pass does about it (read-only)",
		arg:     "TASK (a UUID, /pulp/api/v3/tasks/UUID/, /pulp/DOMAIN/api/v3/tasks/UUID/ or prn:core.task:UUID)",
		argName: "TASK_ID",
		keys:    readKeys,
		exits: []exitCode{{0, "explained"}, {1, "no such task, or Redis or PostgreSQL could not be read"},
			{2, usageOrConfig}},
		flags: func(cmd *cobra.Command, loader *config.Loader) runFunc {
			limit := limitFlagNoting(cmd.Flags(), fmt.Sprintf(". The older tasks that go first are read %d at most: "+
				"--limit 0 shows those, and the table says how many more there are", pulpdb.MaxAhead))
			return func(ctx context.Context, env Env, args []string) int {
				return runExplain(ctx, env, cmd, loader, limit, args[0])
			}
		},
	}
}

// runExplain reads one snapshot, as a pass does but writing nothing, and
// explains one task. Exit 0, 1 when the task does not exist or the read
// failed, 2 on usage errors.
func runExplain(ctx context.Context, env Env, cmd *cobra.Command, loader *config.Loader, limit *limitValue, arg string) int {
	fs := cmd.Flags()
	taskID, err := taskIDOf(arg)
	if err != nil {
		fmt.Fprintf(env.Stderr, "lock-reaper explain: %v\n", err)
		return exitcode.Usage
	}
	progress := progressStderr(&env)
	r, s, code, ok := newReaper(fs, loader, env, false)
	if !ok {
		return code
	}
	defer s.close()
	progress.enable(s.cfg.Log.Format)
	in, err := r.Inspect(ctx, reaper.InspectOptions{TaskID: taskID, Progress: progress.keys})
	progress.done()
	if err != nil {
		f := s.failed(err)
		fmt.Fprintf(env.Stderr, "lock-reaper explain: %s\n", f.message)
		return failureCode(f)
	}
	ex := explain.ExplainPassing(in, taskID, recentPasses(ctx, r, env))
	if err := writeExplanation(env.Stdout, s.cfg.Output, ex, layoutFor(env.Stdout, envLookup(env), limit)); err != nil {
		return exitcode.Failed
	}
	if ex.Status == explain.StatusNotFound {
		return exitcode.Failed
	}
	return exitcode.OK
}

// passRecordedWithin is how recent a recorded pass must be for explain to
// promise the next one: the status page's hour, past which it says that no
// reaper has passed. A CronJob every few minutes or a daemon each minute is
// far inside it.
const passRecordedWithin = time.Hour

// passesLooked is how many of the newest entries explain reads to find a
// recent pass: more than one, so that an entry that is no pass (anyone who
// may write under the reaper's prefix may write the list) hides none.
const passesLooked = 10

// recentPasses reads the history of passes, as the status page does, for
// whether a reaper has recorded one within passRecordedWithin. A failed read
// is said on stderr; the explanation then promises no pass.
func recentPasses(ctx context.Context, r *reaper.Reaper, env Env) *explain.Passes {
	got, err := r.RecentPasses(ctx, time.Now().Add(-passRecordedWithin), passesLooked)
	if err != nil {
		fmt.Fprintf(env.Stderr, "lock-reaper explain: the history of passes could not be read, so whether a reaper passes is unknown: %s\n", quoteText(err.Error()))
		return &explain.Passes{Within: reaper.Seconds(passRecordedWithin), Unread: err.Error()}
	}
	return explain.RecordedWithin(passRecordedWithin, len(got.Entries) > 0)
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
