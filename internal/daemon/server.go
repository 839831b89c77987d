package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// shutdownTimeout bounds how long a stopping server waits for requests in
// flight (a scrape) before it closes their connections.
const shutdownTimeout = 5 * time.Second

// Handler serves /metrics, /livez and /readyz, and the status page at /
// when Config.Pages is set.
func (d *Daemon) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(d.registry, promhttp.HandlerOpts{
		Registry: d.registry, ErrorLog: slog.NewLogLogger(d.log.Handler(), slog.LevelWarn),
	}))
	mux.HandleFunc("GET /livez", func(w http.ResponseWriter, _ *http.Request) {
		ok, reason := d.health.live(time.Now())
		writeProbe(w, ok, reason)
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		ok, reason := d.health.ready()
		writeProbe(w, ok, reason)
	})
	if d.cfg.Pages != nil {
		// Every other path and method is the status page's, which answers
		// 405 to anything but GET and HEAD.
		mux.Handle("/", d.cfg.Pages)
	}
	return mux
}

// writeProbe answers a probe: 200 and "ok", or 503 and the reason.
func writeProbe(w http.ResponseWriter, ok bool, reason string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if !ok {
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	fmt.Fprintln(w, reason)
}

func (d *Daemon) newServer() *http.Server {
	return &http.Server{
		Handler:           d.Handler(),
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       time.Minute,
		ErrorLog:          slog.NewLogLogger(d.log.Handler(), slog.LevelWarn),
	}
}

// serve runs the server until it is shut down. Any other end is fatal: a
// daemon whose probes cannot be answered is restarted by Kubernetes anyway,
// and exiting says why.
func (d *Daemon) serve(srv *http.Server, ln net.Listener) {
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		d.fail(fmt.Errorf("serve http: %w", err))
	}
}

// shutdownServer stops the server, letting a scrape in flight finish.
func (d *Daemon) shutdownServer(srv *http.Server) {
	ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		_ = srv.Close()
	}
}
