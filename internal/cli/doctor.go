package cli

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/lock-reaper/lock-reaper/heartbeat"
	"github.com/lock-reaper/lock-reaper/internal/config"
	"github.com/lock-reaper/lock-reaper/internal/daemon"
	"github.com/lock-reaper/lock-reaper/internal/doctor"
	"github.com/lock-reaper/lock-reaper/internal/exitcode"
	"github.com/lock-reaper/lock-reaper/reaper"
)

func doctorCommand() command {
	return command{
		name: "doctor", summary: "check Redis and PostgreSQL for what makes Pulp's locks unsafe (read-only)",
		keys: readKeys, exits: genericExits,
		flags: func(cmd *cobra.Command, loader *config.Loader) runFunc {
			return func(ctx context.Context, env Env, _ []string) int { return runDoctor(ctx, env, cmd, loader) }
		},
	}
}

// runDoctor runs every check of package doctor against the configured Redis
// and PostgreSQL. Exit 0 all ok, 3 warnings, 1 a failure, 2 usage or
// configuration.
func runDoctor(ctx context.Context, env Env, cmd *cobra.Command, loader *config.Loader) int {
	fs := cmd.Flags()
	r, s, code, ok := newReaper(fs, loader, env, false)
	if !ok {
		return code
	}
	defer s.close()
	rep := doctor.Run(ctx, doctorTarget(r, s))
	if isJSON(s.cfg.Output) {
		if err := writeJSON(env.Stdout, s.cfg.Output, rep); err != nil {
			return exitcode.Failed
		}
	} else {
		writeDoctorText(env.Stdout, rep)
	}
	return exitcode.OfDoctor(rep)
}

// doctorTarget points the checks at the clients a pass uses; the
// legacy-owners check reads one snapshot exactly as a pass does.
func doctorTarget(r *reaper.Reaper, s *setup) doctor.Target {
	return doctor.Target{
		Redis: s.rdb, Postgres: s.pool, Timeout: max(s.cfg.Pass.RedisTimeout, s.cfg.Pass.DatabaseTimeout),
		HeartbeatWatch: heartbeatWatch(s.cfg.Pass.HeartbeatRecheck),
		Inspect: func(ctx context.Context) (*reaper.Inspection, error) {
			return r.Inspect(ctx, reaper.InspectOptions{})
		},
	}
}

// heartbeatWatch is how long doctor watches heartbeats move: what a pass
// waits for its second read (heartbeat_recheck), a worker's period and the
// margin unless set.
func heartbeatWatch(recheck time.Duration) time.Duration {
	return heartbeat.AppStatus{TTL: heartbeat.DefaultWorkerTTL}.RecheckAfter(recheck)
}

// withDoctor makes `run` check the deployment once, after its first pass,
// judging that pass's inspection when the status page keeps it.
func withDoctor(dc daemon.Config, r *reaper.Reaper, s *setup) daemon.Config {
	dc.Doctor = func(ctx context.Context, in *reaper.Inspection) doctor.Report {
		t := doctorTarget(r, s)
		if in != nil {
			t.Inspect = func(context.Context) (*reaper.Inspection, error) { return in, nil }
		}
		return doctor.Run(ctx, t)
	}
	return dc
}

// writeDoctorText prints one line per check, and the fix under each that
// is not ok.
func writeDoctorText(w io.Writer, rep doctor.Report) {
	fmt.Fprintf(w, "lock-reaper doctor: %s\n", doctorCounts(rep))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, c := range rep.Checks {
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", statusText(c.Status), c.Check, c.Evidence)
		if c.Fix != "" {
			fmt.Fprintf(tw, "  \t\tfix: %s\n", c.Fix)
		}
	}
	tw.Flush()
}

// doctorCounts sums up a report: "2 ok, 1 warning, 1 failure, 8 skipped";
// skipped checks only when there are any.
func doctorCounts(rep doctor.Report) string {
	c := rep.Counts
	s := fmt.Sprintf("%d ok, %d %s, %d %s", c[doctor.OK], c[doctor.Warn], plural(c[doctor.Warn], "warning", "warnings"),
		c[doctor.Fail], plural(c[doctor.Fail], "failure", "failures"))
	if n := c[doctor.Skipped]; n > 0 {
		s += fmt.Sprintf(", %d skipped (not run: their service is unreachable)", n)
	}
	return s
}

func statusText(s doctor.Status) string {
	switch s {
	case doctor.Skipped:
		return "SKIP"
	case doctor.Warn:
		return "WARN"
	case doctor.Fail:
		return "FAIL"
	}
	return "ok"
}
