package cli

import (
	"context"
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/lock-reaper/lock-reaper/heartbeat/kube"
	"github.com/lock-reaper/lock-reaper/internal/config"
	"github.com/lock-reaper/lock-reaper/internal/daemon"
	"github.com/lock-reaper/lock-reaper/internal/exitcode"
	"github.com/lock-reaper/lock-reaper/internal/status"
)

func runCommand() command {
	return command{
		name: "run", summary: "the daemon: passes on a schedule, /metrics, /livez, /readyz and the status page on --listen",
		keys: runKeys,
		exits: []exitCode{{0, "stopped by SIGTERM or SIGINT, after the pass under way"}, {1, "the listener could not be bound or kept"},
			{2, "configuration error"}},
		flags: func(cmd *cobra.Command, loader *config.Loader) runFunc {
			return func(ctx context.Context, env Env, _ []string) int { return runDaemon(ctx, env, cmd, loader) }
		},
	}
}

// runDaemon runs passes until ctx is cancelled (SIGTERM or SIGINT in main),
// finishes the pass under way and exits 0. A failed pass never ends it: only
// a bad configuration (2) or a listener it cannot bind or keep (1) does.
func runDaemon(ctx context.Context, env Env, cmd *cobra.Command, loader *config.Loader) int {
	fs := cmd.Flags()
	// No --force here: a daemon that ignores the mass-death guard on every
	// pass would release a whole fleet's locks during a database outage.
	r, s, code, ok := newReaperWith(fs, loader, env, false, true)
	if !ok {
		return code
	}
	defer s.close()
	dc := withDoctor(daemonConfig(s.cfg, s.log, env.Version), r, s)
	if s.cfg.HeartbeatPoll > 0 {
		dc.Heartbeats, dc.HeartbeatPoll, dc.HeartbeatGrace = r.Heartbeats, s.cfg.HeartbeatPoll, s.cfg.Pass.HeartbeatGrace
	}
	if s.pods != nil {
		// The watch ends before the deferred close, with the daemon.
		stopWatch := watchPods(ctx, s.pods)
		defer stopWatch()
		dc.Wake = s.pods.Ended()
	}
	dc.PodsListed = daemon.PodsListedBy(s.podSource)
	if s.events != nil {
		dc.Events = s.events.Record
	}
	if s.cfg.PushgatewayURL != "" {
		s.log.Info("pushgateway_url is ignored by run: scrape its /metrics instead")
	}
	var pages *status.Server
	if s.cfg.StatusPage {
		pages = status.New(r, status.Options{Logger: s.log, Refresh: statusRefresh})
		dc.Pages = pages
	}
	d, err := daemon.New(r, dc)
	if err != nil {
		configFailure(env.Stderr, s.cfg.Log.Format, "lock-reaper run", err)
		return exitcode.Usage
	}
	if err := d.Start(ctx); err != nil {
		s.log.Error("daemon did not start", slog.String("error", err.Error()))
		return exitcode.Failed
	}
	<-d.Done()
	d.Stop()
	if pages != nil {
		pages.Wait()
	}
	if err := d.Err(); err != nil {
		return exitcode.Failed
	}
	s.log.Info("daemon stopped")
	return exitcode.OK
}

// watchPods runs the pods watch until the returned stop is called.
func watchPods(ctx context.Context, w *kube.Watcher) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.Run(ctx)
	}()
	return func() {
		cancel()
		<-done
	}
}

// daemonConfig maps the loaded configuration onto the daemon's.
func daemonConfig(c config.Config, logger *slog.Logger, version string) daemon.Config {
	return daemon.Config{
		Schedule:         c.Schedule,
		Jitter:           c.Jitter,
		FullScanInterval: c.FullScanInterval,
		Listen:           c.Listen,
		Version:          version,
		Logger:           logger,
	}
}
