// Package daemon is lock-reaper's long-running service, `lock-reaper run`.
//
// It runs reaper passes on a cron schedule, one at a time, with random
// jitter before each. Most passes read only Pulp's owner registry; every
// FullScanInterval, and on the first pass, a pass also scans the keyspace
// for locks no registry lists. A failed pass is logged, counted and retried
// on a later tick with exponential backoff; the daemon never exits because a
// pass failed. It serves /metrics, /livez and /readyz over HTTP.
//
// The shape follows River's maintenance services: a Config whose zero fields
// take documented defaults, Start and Stop that may be called more than once,
// Stop returning only when every goroutine is gone, and sleeps that a cancel
// interrupts.
package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/robfig/cron/v3"

	"github.com/lock-reaper/lock-reaper/internal/doctor"
	"github.com/lock-reaper/lock-reaper/internal/metrics"
	"github.com/lock-reaper/lock-reaper/reaper"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
	"github.com/lock-reaper/lock-reaper/reaper/pulpdb"
)

// Defaults of the Config fields left zero.
const (
	ScheduleDefault             = "@every 1m"
	FullScanIntervalDefault     = 10 * time.Minute
	ListenDefault               = ":9090"
	MaxRetryDelayDefault        = 5 * time.Minute
	UnreadyAfterFailuresDefault = 3
	PassTimeoutDefault          = 10 * time.Minute
	ShutdownGraceDefault        = 20 * time.Second
	WakeDebounceDefault         = time.Second
	HeartbeatPollDefault        = 2 * time.Second
)

// Runner runs one pass; *reaper.Reaper is one. The report must describe the
// pass whatever happened, as reaper.Reaper.RunOnce's does.
type Runner interface {
	RunOnce(ctx context.Context, opts reaper.Options) (*reaper.Report, error)
}

// Config configures a Daemon. Zero fields take the defaults above.
type Config struct {
	// Schedule says when passes run: a five-field cron expression or a
	// descriptor such as "@every 30s" or "@hourly", as cron.ParseStandard
	// reads it. The first pass runs at once; later ones on the schedule.
	// Default "@every 1m".
	Schedule string
	// Jitter is the longest random delay before each pass, so that reapers
	// started together (sidecars of a worker Deployment) do not query in
	// step. Zero means none; negative is an error.
	Jitter time.Duration
	// FullScanInterval is how often a pass scans the whole keyspace as well
	// as the owner registry; only a full scan finds the locks of owners that
	// never registered. The first pass is always a full scan. Default 10m.
	FullScanInterval time.Duration
	// MaxRetryDelay caps the backoff after failed passes: the n-th failure in
	// a row lets 2^(n-1)-1 ticks go by, but never waits past this long.
	// Default 5m.
	MaxRetryDelay time.Duration
	// UnreadyAfterFailures is how many failed passes in a row make /readyz
	// answer 503. Default 3.
	UnreadyAfterFailures int
	// PassTimeout cuts a pass short; /livez fails when a pass outlives it by
	// a minute, which means something ignores cancellation. Default 10m.
	PassTimeout time.Duration
	// ShutdownGrace is how long a pass under way may go on once the daemon
	// is told to stop; then it is cancelled. Its writes are conditional, so a
	// pass cut short leaves nothing half-judged. Default 20s, inside
	// Kubernetes' default 30s termination grace period.
	ShutdownGrace time.Duration
	// Listen is the HTTP listener's address; port 0 picks a free port, which
	// Addr then names. Default ":9090".
	Listen string
	// Version is lock-reaper's version, for lock_reaper_build_info.
	Version string
	// Logger receives the daemon's logs. Default: discard.
	Logger *slog.Logger
	// Doctor, when set, checks the deployment once, after the first pass
	// (see startDoctor); in is the first pass's inspection when the status
	// page keeps it, for the doctor to judge instead of reading its own.
	Doctor func(ctx context.Context, in *reaper.Inspection) doctor.Report
	// Wake, when set, starts a pass before its tick each time it receives
	// (the kubelet reported a worker container's end: kube.Watcher.Ended).
	// Passes still never overlap: a wake during a pass runs one more pass
	// after it.
	Wake <-chan struct{}
	// WakeDebounce is how long a wake waits for the wakes that follow it,
	// so that a burst (a node's pods, a rollout) runs one pass. Default 1s.
	WakeDebounce time.Duration
	// Heartbeats, when set, is read every HeartbeatPoll between passes (the
	// worker rows and the database's now: reaper.Reaper.Heartbeats), and a
	// pass starts as soon as a row crossed ttl + HeartbeatGrace since the last
	// pass, a row the last read found is deleted, a row went past its ttl
	// while the pods are only listed (PodsListed), or the moment the last
	// pass said a verdict could change (reaper.Report.NextChange) has come.
	// The schedule stays the longest wait between passes.
	Heartbeats func(ctx context.Context) (pulpdb.Heartbeats, error)
	// PodsListed, when set, says whether the passes' pods come from a list
	// each pass makes, rather than from a watch whose reports wake passes
	// (Wake): no watch, or a watch that is refused, failing or silent
	// (kube.Watcher.FromCache false). While it says so, a heartbeat read
	// that finds a row gone past its ttl since the last pass starts a pass,
	// once per row: from that moment the pod's absence from a list proves
	// the worker dead (pod-gone), and no watch would start that pass. nil
	// without Kubernetes evidence. It is called on every heartbeat read,
	// so it must return at once.
	PodsListed func() bool
	// HeartbeatGrace is the passes' heartbeat_grace, for Heartbeats.
	HeartbeatGrace time.Duration
	// HeartbeatPoll is the shortest wait between two reads of Heartbeats;
	// each read is made when a row read before can first go stale or
	// cross, at least every HeartbeatGrace (nextPoll). Default 2s.
	HeartbeatPoll time.Duration
	// Events, when set, is handed each pass's report once the pass is
	// over, to record its Kubernetes Events (kubeevents.Recorder.Record),
	// and returns how many could not be written, which
	// lock_reaper_kubernetes_event_failures_total counts. It bounds its
	// own time, even when ctx is cancelled: the loop waits for it.
	Events func(ctx context.Context, rep *reaper.Report) (failed int)
	// Pages, when set, serves the status page at / beside /metrics and is
	// handed every pass (see Pages).
	Pages Pages
}

// Pages is the status page the daemon serves (status.Server is one). The
// daemon hands it each pass's snapshot and report once the pass is over;
// PassDone must return at once, so that a page never delays a pass. Shed,
// before a pass, may wait for the last view to be built under a memory
// limit: two snapshots at once do not fit it.
type Pages interface {
	http.Handler
	// KeepsSnapshot says whether the page wants a pass's snapshot, with
	// findings stale holdings, kept through the pass's writes to judge
	// again for its view. When it does not, PassDone gets none and the
	// page reads an inspection of its own once the pass is over.
	KeepsSnapshot(findings int) bool
	// PassDone is handed the snapshot the pass judged (nil when it read
	// none or the page did not keep it), its report, and when the next
	// pass is due.
	PassDone(snap *judge.Snapshot, rep *reaper.Report, next time.Time)
	// DoctorDone is handed doctor's results at start.
	DoctorDone(rep doctor.Report)
	// Shed is called before each pass reads its snapshot, so that the
	// page's last view need not be kept whole beside it.
	Shed()
	// Inspection waits for the view being built and returns its
	// inspection, nil when the page keeps none whole.
	Inspection() *reaper.Inspection
	// ObserveBlocked has f told the blocked waiting tasks of every view
	// the page builds: a pass reads no waiting task, the page's view of it
	// does, and the daemon's lock_reaper_blocked_tasks is what it found.
	ObserveBlocked(f func(tasks int, oldestWait time.Duration))
}

// withDefaults fills the zero fields.
func (c Config) withDefaults() Config {
	setDefault(&c.Schedule, ScheduleDefault)
	setDefault(&c.FullScanInterval, FullScanIntervalDefault)
	setDefault(&c.MaxRetryDelay, MaxRetryDelayDefault)
	setDefault(&c.UnreadyAfterFailures, UnreadyAfterFailuresDefault)
	setDefault(&c.PassTimeout, PassTimeoutDefault)
	setDefault(&c.ShutdownGrace, ShutdownGraceDefault)
	setDefault(&c.Listen, ListenDefault)
	setDefault(&c.WakeDebounce, WakeDebounceDefault)
	setDefault(&c.HeartbeatPoll, HeartbeatPollDefault)
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

func setDefault[T comparable](field *T, def T) {
	var zero T
	if *field == zero {
		*field = def
	}
}

// parse validates the configuration, naming the setting a user could have
// got wrong, and returns the parsed schedule.
func (c Config) parse(now time.Time) (cron.Schedule, error) {
	sched, err := cron.ParseStandard(c.Schedule)
	if err != nil {
		return nil, fmt.Errorf("schedule: %q: %w", c.Schedule, err)
	}
	if sched.Next(now).IsZero() {
		return nil, fmt.Errorf("schedule: %q never fires", c.Schedule)
	}
	switch {
	case c.Jitter < 0:
		return nil, fmt.Errorf("jitter must not be negative, got %v", c.Jitter)
	case c.FullScanInterval < 0:
		return nil, fmt.Errorf("full_scan_interval must not be negative, got %v", c.FullScanInterval)
	case c.MaxRetryDelay < 0, c.UnreadyAfterFailures < 0, c.PassTimeout < 0, c.ShutdownGrace < 0, c.WakeDebounce < 0,
		c.HeartbeatPoll < 0, c.HeartbeatGrace < 0:
		return nil, errors.New("daemon: negative MaxRetryDelay, UnreadyAfterFailures, PassTimeout, ShutdownGrace, WakeDebounce, HeartbeatPoll or HeartbeatGrace")
	}
	return sched, nil
}

// Daemon runs passes on a schedule and serves their metrics and health.
type Daemon struct {
	cfg      Config
	schedule cron.Schedule
	runner   Runner
	log      *slog.Logger
	metrics  *metrics.Metrics
	registry *prometheus.Registry
	health   *health

	mu      sync.Mutex
	started bool
	cancel  context.CancelFunc
	done    chan struct{}
	addr    net.Addr
	err     error
	// doctorDone is closed once the doctor started after the first pass
	// is done; nil before that pass (only the loop's goroutine sets it).
	doctorDone <-chan struct{}

	// passDone, when set by a test before Start, is called after every pass.
	passDone func(PassResult)
	// jitterN, when set by a test before Start, draws the jitter in [0, n)
	// instead of rand.N.
	jitterN func(n time.Duration) time.Duration
}

// New checks the configuration and returns a Daemon that runs runner's
// passes. Nothing starts before Start.
func New(runner Runner, cfg Config) (*Daemon, error) {
	if runner == nil {
		return nil, errors.New("daemon: nil Runner")
	}
	cfg = cfg.withDefaults()
	sched, err := cfg.parse(time.Now())
	if err != nil {
		return nil, err
	}
	m := metrics.New(cfg.Version)
	reg, err := metrics.NewProcessRegistry(m)
	if err != nil {
		return nil, fmt.Errorf("register metrics: %w", err)
	}
	if cfg.Pages != nil {
		cfg.Pages.ObserveBlocked(m.SetBlocked)
	}
	return &Daemon{
		cfg: cfg, schedule: sched, runner: runner, log: cfg.Logger, metrics: m, registry: reg,
		health: newHealth(cfg.UnreadyAfterFailures, cfg.PassTimeout+time.Minute),
		done:   make(chan struct{}),
	}, nil
}

// Start binds the HTTP listener, so a busy port is an error here, and starts
// the pass loop and the server in the background. The loop runs until ctx is
// cancelled or Stop is called; a pass under way then finishes first (within
// ShutdownGrace). Starting a running daemon does nothing; a Daemon cannot be
// started again once it has stopped.
func (d *Daemon) Start(ctx context.Context) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.started {
		select {
		case <-d.done:
			return errors.New("daemon: already stopped; make a new one")
		default:
			return nil
		}
	}
	ln, err := net.Listen("tcp", d.cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", d.cfg.Listen, err)
	}
	d.started = true
	d.addr = ln.Addr()
	ctx, d.cancel = context.WithCancel(ctx)
	d.health.loopStarted()
	srv := d.newServer()
	serveDone := make(chan struct{})
	go func() {
		defer close(serveDone)
		d.serve(srv, ln)
	}()
	go func() {
		defer close(d.done)
		d.loop(ctx)
		if d.doctorDone != nil {
			<-d.doctorDone
		}
		d.shutdownServer(srv)
		<-serveDone
	}()
	d.log.Info("daemon started", slog.String("addr", d.addr.String()), slog.String("schedule", d.cfg.Schedule),
		slog.Duration("jitter", d.cfg.Jitter), slog.Duration("full_scan_interval", d.cfg.FullScanInterval))
	return nil
}

// Stop stops the daemon and returns once its goroutines are gone. A pass
// under way finishes first, within ShutdownGrace. Stopping a daemon that
// never started or already stopped does nothing.
func (d *Daemon) Stop() {
	d.mu.Lock()
	started, cancel := d.started, d.cancel
	d.mu.Unlock()
	if !started {
		return
	}
	cancel()
	<-d.done
}

// Done is closed once the daemon has stopped: its context was cancelled, Stop
// was called, or the HTTP server failed (see Err).
func (d *Daemon) Done() <-chan struct{} { return d.done }

// Err is why the daemon stopped by itself, once Done is closed: nil after a
// cancel or Stop, the error when the HTTP server failed.
func (d *Daemon) Err() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.err
}

// Addr is the address the HTTP listener is bound to, once Start returned;
// with port 0 in Listen it tells which port was picked.
func (d *Daemon) Addr() net.Addr {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.addr
}

// fail records a fatal error and stops the loop.
func (d *Daemon) fail(err error) {
	d.mu.Lock()
	if d.err == nil {
		d.err = err
	}
	cancel := d.cancel
	d.mu.Unlock()
	d.log.Error("daemon stopping", slog.String("error", err.Error()))
	cancel()
}
