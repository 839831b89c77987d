package cli

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/user"
	"strings"

	"github.com/mattn/go-isatty"
	"github.com/spf13/cobra"

	"github.com/lock-reaper/lock-reaper/internal/config"
	"github.com/lock-reaper/lock-reaper/internal/exitcode"
	"github.com/lock-reaper/lock-reaper/reaper"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
	"github.com/lock-reaper/lock-reaper/reaper/redislocks"
)

func releaseCommand() command {
	return command{
		name: "release", summary: "break-glass: release every lock of one owner known to be dead and handle its tasks as a dead worker's",
		keys: readKeys, flags: releaseFlagsOf,
		exits: []exitCode{{0, "released (or, with --dry-run, nothing to do)"}, {1, "the pass could not complete"},
			{2, usageOrConfig + "; or --owner names an owner that holds nothing and has no AppStatus row (the nearest known owners are listed)"},
			{3, "with --dry-run: the release would do something"},
			{4, "the owner has an online AppStatus row (without --force), or a guard held work back"},
			{exitAborted, "answered no at the prompt: nothing was written"},
			{exitPassLockHeld, "another lock-reaper pass (or pulpcore's worker cleanup) held the pass lock: nothing was released; run it again"}},
	}
}

// exitAborted is the exit code of a release the operator declined at the
// prompt: nothing was written, and nothing failed either.
const exitAborted = 5

// exitPassLockHeld is the exit code of a release that did not run because
// another pass held the pass lock. For once, a skipped pass is fine (the
// other pass does the work, exit 0); a release asked for one owner's locks,
// so exit 0 would read as done (a Job shows Completed) while every lock is
// still held.
const exitPassLockHeld = 6

// releaseFlags are the flags of `lock-reaper release` besides the
// configuration.
type releaseFlags struct {
	owner  string
	yes    bool
	force  bool
	dryRun bool
	limit  *limitValue
}

// releaseFlagsOf defines the flags of `release` and returns the release.
func releaseFlagsOf(cmd *cobra.Command, loader *config.Loader) runFunc {
	fs := cmd.Flags()
	var rf releaseFlags
	fs.StringVar(&rf.owner, "owner", "", "the lock owner to release, as Redis names it: an AppStatus `name` such as 1@pulp-worker-3")
	fs.BoolVar(&rf.yes, "yes", false, "do not ask for confirmation (required when stdin is not a terminal)")
	fs.BoolVar(&rf.force, "force", false, "release even though the owner has an online AppStatus row")
	fs.BoolVar(&rf.dryRun, "dry-run", false, "report what the release would do and write nothing")
	rf.limit = limitFlag(fs)
	return func(ctx context.Context, env Env, _ []string) int { return runRelease(ctx, env, cmd, loader, rf) }
}

// runRelease is the break-glass release of one owner an operator knows to be
// dead: every holding of it is released and its tasks are handled as for a
// dead worker, whatever its heartbeat says, by one real pass restricted to
// that owner. It reports like `once` (mode "release"), or like `audit` with
// --dry-run, and has the same exit codes; an owner with an online AppStatus
// row is refused (exit 4) unless --force.
func runRelease(ctx context.Context, env Env, cmd *cobra.Command, loader *config.Loader, rf releaseFlags) int {
	fs := cmd.Flags()
	if rf.owner == "" {
		fmt.Fprintln(env.Stderr, "lock-reaper release: --owner is required")
		return exitcode.Usage
	}
	if problem := redislocks.OwnerProblem(rf.owner); problem != "" {
		fmt.Fprintf(env.Stderr, "lock-reaper release: --owner: %s\n", problem)
		return exitcode.Usage
	}
	interactive := !rf.yes && !rf.dryRun
	progress := progressStderr(&env)
	r, s, code, ok := newReaper(fs, loader, env, rf.force)
	if !ok {
		return code
	}
	defer s.close()
	operator := operatorAttrs()
	s.log.LogAttrs(ctx, slog.LevelWarn, "break-glass release started", append(operator,
		slog.String("owner", rf.owner), slog.Bool("force", rf.force), slog.Bool("dry_run", rf.dryRun), slog.Bool("yes", rf.yes))...)

	in, err := r.Inspect(ctx, reaper.InspectOptions{})
	if err != nil {
		f := s.failed(err)
		fmt.Fprintf(env.Stderr, "lock-reaper release: %s\n", f.message)
		return failureCode(f)
	}
	if !knownOwner(in.Snapshot, rf.owner) {
		reportUnknownOwner(env.Stderr, "release", in.Snapshot, rf.owner)
		s.log.LogAttrs(ctx, slog.LevelWarn, "break-glass release not run: unknown owner", append(operator,
			slog.String("owner", rf.owner), slog.Int("exit_code", exitUnknownOwner))...)
		return exitUnknownOwner
	}
	// Whether the owner is unknown or alive is said before asking for --yes:
	// a --yes added then would only meet a refusal.
	if interactive && !stdinIsTerminal(env.Stdin) {
		if code, refused := refuseAliveOwner(env, in, rf.owner); refused {
			return code
		}
		fmt.Fprintf(env.Stderr, "lock-reaper release: releasing the locks of %s needs confirmation and stdin is not a terminal: rerun with --yes (or --dry-run to see what it would do)\n", rf.owner)
		return exitcode.Usage
	}
	if interactive {
		if code, ok := confirmRelease(env, in, rf.owner); !ok {
			s.log.LogAttrs(ctx, slog.LevelWarn, "break-glass release not run", append(operator,
				slog.String("owner", rf.owner), slog.Int("exit_code", code))...)
			return code
		}
	}
	mode, recorded := reaper.ModeRelease, reaper.HistoryRelease
	if rf.dryRun {
		mode, recorded = reaper.ModeAudit, ""
	}
	progress.enable(s.cfg.Log.Format)
	rep, err := r.RunOnce(ctx, reaper.Options{Mode: mode, History: recorded, ReleaseOwner: rf.owner, Progress: progress.keys})
	progress.done()
	s.tally.flush(ctx)
	code = s.passExit(rep, err)
	if rep.Skipped != "" && code == exitcode.OK {
		code = exitPassLockHeld
	}
	logReleaseDone(ctx, s.log, operator, rf.owner, rep)
	heading := ""
	if rf.dryRun {
		heading = "lock-reaper release (dry run: nothing was written)"
	}
	if err := writePassReport(env, s.cfg.Output, rep, rf.limit, heading); err != nil {
		return exitcode.Failed
	}
	if code == exitPassLockHeld {
		fmt.Fprintf(env.Stderr, "lock-reaper release: nothing was released: %s; run the release again once that pass ends (exit %d)\n", rep.Skipped, exitPassLockHeld)
	}
	return code
}

// confirmRelease previews the release on a read-only inspection and asks the
// operator on the terminal. It refuses an owner that is alive (exit 4, as a
// guard does) without asking.
func confirmRelease(env Env, in *reaper.Inspection, owner string) (int, bool) {
	if code, refused := refuseAliveOwner(env, in, owner); refused {
		return code, false
	}
	plan := in.OwnerRelease(owner)
	releases, updates, deferred := plannedWork(plan)
	if releases+updates == 0 && deferred == 0 {
		return 0, true
	}
	if deferred > 0 {
		fmt.Fprintf(env.Stderr, "%d more holdings or tasks exceed max_releases/max_task_updates and wait for another run.\n", deferred)
	}
	fmt.Fprintf(env.Stderr, "Release %d holdings of %s and update %d tasks? [y/N] ", releases, quoteText(owner), updates)
	if !answeredYes(env.Stdin) {
		fmt.Fprintln(env.Stderr, "lock-reaper release: aborted; nothing was written")
		return exitAborted, false
	}
	return 0, true
}

// refuseAliveOwner refuses (exit 4, as a guard does) an owner with an
// online AppStatus row, unless --force made the plan leave it be.
func refuseAliveOwner(env Env, in *reaper.Inspection, owner string) (int, bool) {
	for _, g := range in.OwnerRelease(owner).Guards {
		if g.Name == judge.GuardAliveOwner {
			fmt.Fprintf(env.Stderr, "lock-reaper release: refused: %s\n", reaper.GuardReason(g))
			return exitcode.Guarded, true
		}
	}
	return 0, false
}

// plannedWork counts what a plan would do now and what it holds back.
func plannedWork(plan judge.Plan) (releases, updates, deferred int) {
	for _, jd := range plan.Holdings {
		switch {
		case jd.Action != judge.ActionRelease:
		case jd.Deferred != "":
			deferred++
		default:
			releases++
		}
	}
	for _, tj := range plan.Tasks {
		switch {
		case tj.Action != judge.ActionUpdate:
		case tj.Deferred != "":
			deferred++
		default:
			updates++
		}
	}
	return releases, updates, deferred
}

// terminal is implemented by a Stdin that knows whether it is a terminal;
// tests use it to answer the prompt.
type terminal interface{ IsTerminal() bool }

func stdinIsTerminal(r io.Reader) bool {
	switch in := r.(type) {
	case terminal:
		return in.IsTerminal()
	case *os.File:
		return isatty.IsTerminal(in.Fd()) || isatty.IsCygwinTerminal(in.Fd())
	}
	return false
}

// answeredYes reads one line; only y or yes (any case) confirms.
func answeredYes(r io.Reader) bool {
	if r == nil {
		return false
	}
	line, err := bufio.NewReader(r).ReadString('\n')
	if err != nil && line == "" {
		return false
	}
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return true
	}
	return false
}

// operatorAttrs names who ran the command, for the audit trail in the logs.
func operatorAttrs() []slog.Attr {
	name := "unknown"
	if u, err := user.Current(); err == nil {
		name = u.Username
	}
	host, err := os.Hostname()
	if err != nil {
		host = "unknown"
	}
	return []slog.Attr{slog.String("operator", name), slog.String("operator_host", host)}
}

func logReleaseDone(ctx context.Context, log *slog.Logger, operator []slog.Attr, owner string, rep *reaper.Report) {
	attrs := append(operator, slog.String("owner", owner), slog.String("mode", rep.Mode),
		slog.Int("released", rep.Summary.Released), slog.Int("tasks_updated", rep.Summary.TasksUpdated),
		slog.Int("deferred", rep.Summary.Deferred), slog.Int("exit_code", exitcode.Of(rep)))
	if rep.Skipped != "" {
		attrs = append(attrs, slog.String("skipped", rep.Skipped))
	}
	if rep.Error != "" {
		attrs = append(attrs, slog.String("error", rep.Error))
	}
	for _, g := range rep.Guards {
		attrs = append(attrs, slog.String("guard", g.Name))
	}
	log.LogAttrs(ctx, slog.LevelWarn, "break-glass release finished", attrs...)
}
