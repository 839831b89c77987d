// Package status serves lock-reaper's read-only status page: why each
// waiting task waits, who holds what, and when it will be freed.
//
// The pages are rendered from a View, a finished picture of one snapshot
// that is published whole through an atomic pointer: a page view reads no
// Redis key and no database row (the task page reads one task's rows, at
// most one at a time, cached for a few seconds), and a pass never waits
// for a page. Only GET and HEAD are served; nothing on a page writes.
package status

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lock-reaper/lock-reaper/internal/doctor"
	"github.com/lock-reaper/lock-reaper/reaper"
	passes "github.com/lock-reaper/lock-reaper/reaper/history"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
	"github.com/lock-reaper/lock-reaper/reaper/pulpdb"
)

// Source is what the pages read beside a snapshot: *reaper.Reaper is one.
type Source interface {
	Policy() judge.Policy
	// WaitingTasks lists the waiting, unclaimed tasks in fetch order.
	WaitingTasks(ctx context.Context, limit int) ([]pulpdb.TaskRow, int, error)
	// ExplainedTask reads a task's rows for explain.On, to explain it on an
	// inspection already made.
	ExplainedTask(ctx context.Context, taskID string) (*pulpdb.ExplainedTask, error)
	// TaskStarts reads when tasks started; granted is false when the role
	// may not read core_task.started_at (an optional grant).
	TaskStarts(ctx context.Context, ids []string) (starts map[string]time.Time, granted bool, err error)
	// RecentPasses reads the history of passes (reaper/history), newest
	// first: at most limit, started at or after since, each entry and the
	// whole read bounded in size.
	RecentPasses(ctx context.Context, since time.Time, limit int) (passes.Passes, error)
	// Inspect reads and judges a snapshot without writing anything: the
	// view of a pass whose snapshot the page did not keep (KeepsSnapshot).
	Inspect(ctx context.Context, opts reaper.InspectOptions) (*reaper.Inspection, error)
}

// Options configure a Server. Zero fields take the defaults below.
type Options struct {
	// MaxWaiting bounds how many waiting tasks the blocked queue reads.
	MaxWaiting int
	// PageSize is the number of rows per table page.
	PageSize int
	// ExplainTTL is how long a task page's explanation is reused.
	ExplainTTL time.Duration
	// Refresh is how often the pages reload themselves (by a small script;
	// without JavaScript they do not). Zero turns it off.
	Refresh time.Duration
	// Logger receives the failures of the reads behind the pages.
	Logger *slog.Logger
	// QueueOnly builds views for their blocked tasks alone (ObserveBlocked),
	// for a process that serves no page (`once`): the reads only the pages
	// show (the history of passes, the start times of running tasks) are
	// left out.
	QueueOnly bool
}

// Defaults of the Options left zero.
const (
	MaxWaitingDefault = 2000
	PageSizeDefault   = 50
	ExplainTTLDefault = 5 * time.Second
)

func (o Options) withDefaults() Options {
	if o.MaxWaiting <= 0 {
		o.MaxWaiting = MaxWaitingDefault
	}
	if o.PageSize <= 0 {
		o.PageSize = PageSizeDefault
	}
	if o.ExplainTTL <= 0 {
		o.ExplainTTL = ExplainTTLDefault
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// Server serves the pages of the latest published View.
type Server struct {
	src  Source
	opts Options
	view atomic.Pointer[View]
	mux  http.Handler

	mu     sync.Mutex
	doctor *doctor.Report
	// pending is the newest pass not yet built into a view; building says
	// a goroutine is building one.
	pending  *job
	building bool
	idle     *sync.Cond

	explain explainCache
	// views numbers the views built (View.number).
	views atomic.Uint64
	// blocked, when set (ObserveBlocked), is told the blocked tasks of
	// every view built.
	blocked func(tasks int, oldestWait time.Duration)
}

// job is a pass or inspection to build a view of.
type job struct {
	in   *reaper.Inspection
	snap *judge.Snapshot
	// inspect says the pass read a snapshot the page did not keep: the
	// view is of an inspection read once the pass is over.
	inspect bool
	rep     *reaper.Report
	taken   time.Time
	next    time.Time
}

// New returns a Server with no view yet: its pages say so until the first
// pass is published.
func New(src Source, opts Options) *Server {
	s := &Server{src: src, opts: opts.withDefaults()}
	s.idle = sync.NewCond(&s.mu)
	s.explain.ttl = s.opts.ExplainTTL
	s.mux = s.routes()
	return s
}

// PassDone hands the server a pass's snapshot (nil when the pass read none)
// and report, and when the next pass is due. It returns at once: the view is
// judged and built in the background, the newest pass winning over one not
// yet started, so a pass never waits for the page.
func (s *Server) PassDone(snap *judge.Snapshot, rep *reaper.Report, next time.Time) {
	read := rep != nil && !rep.DBNow.IsZero()
	s.submit(&job{snap: snap, inspect: snap == nil && read, rep: rep, taken: time.Now(), next: next})
}

// DoctorDone hands the server doctor's results, shown on the overview at
// once: doctor judges the first view's inspection, and the next view may be
// an hour away (`status --every 1h`).
func (s *Server) DoctorDone(rep doctor.Report) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.doctor = &rep
	if old := s.view.Load(); old != nil {
		v := *old
		v.Doctor = &rep
		s.view.Store(&v)
	}
}

// store publishes v with doctor's latest results, which may have come while
// v was built.
func (s *Server) store(v *View) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v.Doctor = s.doctor
	s.view.Store(v)
}

// Publish builds a view of an inspection and publishes it before returning;
// `lock-reaper status` calls it after each read-only inspection.
func (s *Server) Publish(ctx context.Context, in *reaper.Inspection, took time.Duration, next time.Time) {
	rep := &reaper.Report{Mode: reaper.ModeAudit, StartedAt: time.Now().Add(-took).UTC(), DurationMS: took.Milliseconds(),
		DBNow: in.Snapshot.Now, Guards: reaper.GuardsOf(in.Plan.Guards), Kubernetes: in.Kubernetes}
	s.publish(ctx, &job{in: in, rep: rep, taken: time.Now(), next: next})
}

func (s *Server) submit(j *job) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pending = j
	if s.building {
		return
	}
	s.building = true
	go s.buildLoop()
}

func (s *Server) buildLoop() {
	for {
		s.mu.Lock()
		j := s.pending
		s.pending = nil
		if j == nil {
			s.building = false
			s.idle.Broadcast()
			s.mu.Unlock()
			return
		}
		s.mu.Unlock()
		s.publish(context.Background(), j)
	}
}

// Wait returns once no view is being built; tests and a stopping daemon
// call it.
func (s *Server) Wait() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for s.building {
		s.idle.Wait()
	}
}

// publish builds a view of j and makes it the one the pages show. A pass
// with no snapshot (it failed or was skipped) keeps the last view, with this
// pass's report and the history of passes read again.
func (s *Server) publish(ctx context.Context, j *job) {
	// The report's findings hold the pass's own judgement of every holding:
	// let them go before the snapshot is judged again for the view.
	released, updated := releasedBy(j.rep), updatedBy(j.rep)
	j.rep = summaryOf(j.rep)
	in := j.in
	if j.inspect {
		in, j.taken = s.inspectAfter(ctx, j.rep), time.Now()
		// The inspection was read after the pass: nothing it holds was
		// released or updated by it.
		released, updated = nil, nil
	}
	if in == nil && j.snap != nil {
		var kube *reaper.KubernetesReport
		if j.rep != nil {
			kube = j.rep.Kubernetes
		}
		in = reaper.InspectionOf(*j.snap, s.src.Policy(), kube)
	}
	if in == nil {
		if old := s.view.Load(); old != nil {
			v := *old
			v.Report, v.NextPass = j.rep, j.next
			s.readPasses(ctx, &v)
			s.store(&v)
		}
		return
	}
	v := &View{In: in, Report: j.rep, Taken: j.taken, NextPass: j.next, number: s.views.Add(1)}
	v.index(released)
	v.dropUpdated(updated)
	if !s.opts.QueueOnly {
		s.readPasses(ctx, v)
	}
	rows, total, err := s.src.WaitingTasks(ctx, s.opts.MaxWaiting)
	if err != nil {
		v.QueueError = err.Error()
		s.opts.Logger.Warn("status page: waiting tasks not read", slog.String("error", err.Error()))
	}
	v.QueueTotal = total
	v.queue(rows)
	if !s.opts.QueueOnly {
		s.addRunningSince(ctx, v)
	}
	v.Causes = v.causes()
	s.store(v)
	s.observeBlocked(v)
}

// ObserveBlocked has f told, each time a view is built (after every pass,
// or every inspection), how many waiting tasks are blocked and how long the
// oldest of them has waited: the numbers the overview says first, from the
// same function (blockedOf). The daemon sets lock_reaper_blocked_tasks and
// lock_reaper_oldest_blocked_wait_seconds with it. A view whose waiting
// tasks could not be read tells nothing: f keeps the last numbers rather
// than report none blocked.
func (s *Server) ObserveBlocked(f func(tasks int, oldestWait time.Duration)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.blocked = f
}

func (s *Server) observeBlocked(v *View) {
	s.mu.Lock()
	f := s.blocked
	s.mu.Unlock()
	if f == nil || v.QueueError != "" {
		return
	}
	b := v.BlockedTasks()
	f(b.Count, b.OldestWait())
}

// passesWindow is how far back the pages show passes: the chart's day.
const passesWindow = 24 * time.Hour

// readPasses reads the last day's passes of any reaper into v. A failure
// is said on the pages (PassesError), never fails them: the history only
// informs.
func (s *Server) readPasses(ctx context.Context, v *View) {
	v.PassesRead = time.Now()
	got, err := s.src.RecentPasses(ctx, v.PassesRead.Add(-passesWindow), passes.Cap)
	v.Passes, v.PassesSkipped, v.PassesError = got.Entries, got.Skipped(), ""
	if v.PassesSkipped != "" {
		s.opts.Logger.Warn("status page: entries of the history of passes left out", slog.String("skipped", v.PassesSkipped))
	}
	if err != nil {
		v.PassesError = err.Error()
		s.opts.Logger.Warn("status page: history of passes not read", slog.String("error", err.Error()))
	}
}

// View is the published view; nil before the first.
func (s *Server) View() *View { return s.view.Load() }

// ServeHTTP serves the pages.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }
