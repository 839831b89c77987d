package cli

import (
	"context"
	"flag"

	"github.com/lock-reaper/lock-reaper/internal/config"
	"github.com/lock-reaper/lock-reaper/internal/exitcode"
	"github.com/lock-reaper/lock-reaper/reaper"
)

func runAudit(ctx context.Context, env Env, args []string) int {
	return runPass(ctx, env, "audit", args, true)
}

func runOnce(ctx context.Context, env Env, args []string) int {
	return runPass(ctx, env, "once", args, false)
}

// runPass runs one pass; `once --dry-run` is the same as `audit`.
func runPass(ctx context.Context, env Env, name string, args []string, audit bool) int {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	loader := config.Register(fs)
	dryRun := &audit
	force := new(bool)
	if !audit {
		dryRun = fs.Bool("dry-run", false, "report what the pass would do and write nothing (the same as audit)")
		force = fs.Bool("force", false, "act even when the mass-death guard trips (the workers really died)")
	}
	limit := limitFlag(fs)
	registryOnly := fs.Bool("registry-only", false, "read only the owner registry, skip the keyspace SCAN (legacy locks are not seen)")
	if code, ok := parseFlags(fs, env, args, 0); !ok {
		return code
	}
	// Logs go through the progress line, which clears itself around them.
	progress := wrapStderr(env.Stderr)
	env.Stderr = progress
	r, s, code, ok := newReaper(fs, loader, env, *force)
	if !ok {
		return code
	}
	defer s.close()
	opts := reaper.Options{Mode: reaper.ModeOnce, History: reaper.HistoryOnce, RegistryOnly: *registryOnly, Progress: progress.keys, Phase: progress.phase}
	if *dryRun {
		opts.Mode, opts.History = reaper.ModeAudit, ""
	}
	progress.enable(s.cfg.Log.Format)
	rep, err := r.RunOnce(ctx, opts)
	progress.done()
	s.tally.flush(ctx)
	code = s.passExit(rep, err)
	pushPass(ctx, s, env.Version, rep)
	if err := writePassReport(env, s.cfg.Output, rep, limit, ""); err != nil {
		return exitcode.Failed
	}
	return code
}
