package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/spf13/cobra"

	"github.com/lock-reaper/lock-reaper/internal/config"
	"github.com/lock-reaper/lock-reaper/internal/doctor"
	"github.com/lock-reaper/lock-reaper/internal/exitcode"
	"github.com/lock-reaper/lock-reaper/internal/status"
	"github.com/lock-reaper/lock-reaper/reaper"
)

// statusRefresh is how often the status page reloads itself in a browser
// that runs its small script.
const statusRefresh = 30 * time.Second

// statusListenDefault is where `lock-reaper status` serves without --listen:
// loopback only, since the page has no login of its own.
const statusListenDefault = "127.0.0.1:8080"

// statusKeys: what an inspection reads, and the listener.
var statusKeys = func(k config.Key) bool { return readKeys(k) || k.Key == "listen" }

func statusCommand() command {
	return command{
		name: "status", summary: "serve the read-only status page on --listen (default " + statusListenDefault + ") from read-only inspections, for a laptop or kubectl port-forward",
		keys: statusKeys,
		exits: []exitCode{{0, "stopped by SIGTERM or SIGINT"}, {1, "the listener could not be bound or kept"},
			{2, "usage or configuration error"}},
		flags: func(cmd *cobra.Command, loader *config.Loader) runFunc {
			every := cmd.Flags().Duration("every", time.Minute, "how often to inspect Redis and PostgreSQL again")
			registryOnly := cmd.Flags().Bool("registry-only", false, "read only the owner registry, skip the keyspace SCAN (legacy locks are not seen)")
			return func(ctx context.Context, env Env, _ []string) int {
				return runStatus(ctx, env, cmd, loader, *every, *registryOnly)
			}
		},
	}
}

// runStatus serves the pages `lock-reaper run` serves at /, from an
// inspection (what `locks` and `audit` read; nothing is written, not even
// suspects) made at start and every --every after. A failed inspection is
// logged and the pages keep the last one, whose age they show.
func runStatus(ctx context.Context, env Env, cmd *cobra.Command, loader *config.Loader, every time.Duration, registryOnly bool) int {
	fs := cmd.Flags()
	if every < time.Second {
		fmt.Fprintf(env.Stderr, "lock-reaper status: --every must be at least 1s, got %v\n", every)
		return exitcode.Usage
	}
	r, s, code, ok := newReaper(fs, loader, env, false)
	if !ok {
		return code
	}
	defer s.close()
	// --listen is the daemon's setting; here only the flag counts, not
	// REAPER_LISTEN nor the file, so that status run beside a daemon (in its
	// pod, through kubectl exec) never takes the daemon's port or address.
	listen := statusListenDefault
	if f := fs.Lookup("listen"); f != nil && f.Changed {
		listen = f.Value.String()
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		fmt.Fprintf(env.Stderr, "lock-reaper status: listen on %s: %v\n", listen, err)
		return exitcode.Failed
	}
	pages := status.New(r, status.Options{Logger: s.log, Refresh: statusRefresh})
	srv := &http.Server{Handler: pages, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second,
		WriteTimeout: 30 * time.Second, IdleTimeout: time.Minute, ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelWarn)}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	fmt.Fprintf(env.Stderr, "lock-reaper status: serving the status page on http://%s/ (read-only, no login)\n", ln.Addr())
	inspect := func() *reaper.Inspection {
		pages.Shed()
		start := time.Now()
		in, err := r.Inspect(ctx, reaper.InspectOptions{RegistryOnly: registryOnly})
		if err != nil {
			if ctx.Err() == nil {
				s.log.Warn("inspection failed; the page keeps the last one", slog.String("error", s.failed(err).message))
			}
			return nil
		}
		pages.Publish(ctx, in, time.Since(start), time.Now().Add(every))
		return in
	}
	// Doctor judges the first inspection rather than reading a snapshot of
	// its own beside it: two at once would not fit a memory limit sized
	// for one.
	target := doctorTarget(r, s)
	if first := inspect(); first != nil && !registryOnly {
		target.Inspect = func(context.Context) (*reaper.Inspection, error) { return first, nil }
	}
	go func() { pages.DoctorDone(doctor.Run(ctx, target)) }()
	code = exitcode.OK
loop:
	for {
		select {
		case err := <-served:
			s.log.Error("status page stopped", slog.String("error", err.Error()))
			code = exitcode.Failed
			break loop
		case <-ctx.Done():
			break loop
		case <-time.After(every):
			inspect()
		}
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil && !errors.Is(err, http.ErrServerClosed) {
		_ = srv.Close()
	}
	return code
}
