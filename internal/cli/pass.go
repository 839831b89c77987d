package cli

import (
	"context"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/lock-reaper/lock-reaper/internal/config"
	"github.com/lock-reaper/lock-reaper/internal/exitcode"
	"github.com/lock-reaper/lock-reaper/reaper"
)

func auditCommand() command {
	return command{
		name: "audit", summary: "one dry-run pass: report what a real pass would do, write nothing",
		keys: passKeys, exits: auditExits,
		flags: func(cmd *cobra.Command, loader *config.Loader) runFunc { return passFlags(cmd, loader, true) },
	}
}

func onceCommand() command {
	return command{
		name: "once", summary: "one real pass: release stale locks, update lost tasks",
		keys: passKeys, exits: onceExits,
		flags: func(cmd *cobra.Command, loader *config.Loader) runFunc { return passFlags(cmd, loader, false) },
	}
}

// passFlags defines the flags of a pass and returns the pass; `once
// --dry-run` is the same as `audit`.
func passFlags(cmd *cobra.Command, loader *config.Loader, audit bool) runFunc {
	fs := cmd.Flags()
	dryRun := &audit
	force := new(bool)
	if !audit {
		dryRun = fs.Bool("dry-run", false, "report what the pass would do and write nothing (the same as audit)")
		force = fs.Bool("force", false, "act even when the mass-death guard trips (the workers really died)")
	}
	limit := limitFlag(fs)
	registryOnly := fs.Bool("registry-only", false, "read only the owner registry, skip the keyspace SCAN (legacy locks are not seen)")
	return func(ctx context.Context, env Env, _ []string) int {
		return runPass(ctx, env, fs, loader, passFlagValues{dryRun: *dryRun, force: *force, registryOnly: *registryOnly, limit: limit})
	}
}

// passFlagValues are a pass's flags as parsed.
type passFlagValues struct {
	dryRun, force, registryOnly bool
	limit                       *limitValue
}

// runPass runs one pass.
func runPass(ctx context.Context, env Env, fs *pflag.FlagSet, loader *config.Loader, pf passFlagValues) int {
	// Logs go through the progress line, which clears itself around them.
	progress := progressStderr(&env)
	r, s, code, ok := newReaper(fs, loader, env, pf.force)
	if !ok {
		return code
	}
	defer s.close()
	opts := reaper.Options{Mode: reaper.ModeOnce, History: reaper.HistoryOnce, RegistryOnly: pf.registryOnly, Progress: progress.keys, Phase: progress.phase}
	if pf.dryRun {
		opts.Mode, opts.History = reaper.ModeAudit, ""
	}
	blocked := newBlockedView(s, r, opts.Mode)
	if blocked != nil {
		opts.Snapshot = blocked.keep
	}
	progress.enable(s.cfg.Log.Format)
	rep, err := r.RunOnce(ctx, opts)
	progress.done()
	s.tally.flush(ctx)
	// The Events are written before the process exits, within their bound,
	// and never change the pass's exit code.
	s.eventFailures = s.events.Record(ctx, rep)
	code = s.passExit(rep, err)
	pushPass(ctx, s, env.Version, rep, blocked.after(rep))
	if err := writePassReport(env, s.cfg.Output, rep, pf.limit, ""); err != nil {
		return exitcode.Failed
	}
	return code
}
