package status

import (
	"context"
	"log/slog"
	"math"
	"net/http"
	"runtime/debug"
	"time"

	"github.com/lock-reaper/lock-reaper/reaper"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
)

// viewBytesPerHolding bounds what the published view costs per holding
// beyond its summaries: the inspection it keeps (the snapshot and the
// judgement of every holding) and its indexes. BENCHMARKS.md has the
// measured figure; this one is rounded up.
const viewBytesPerHolding = 1 << 10

// softMemoryLimit is the process's soft memory limit (GOMEMLIMIT, or what
// internal/memlimit set from the container's limit); math.MaxInt64 when
// there is none. A variable, so that a test can give its own.
var softMemoryLimit = defaultSoftMemoryLimit

func defaultSoftMemoryLimit() int64 { return debug.SetMemoryLimit(-1) }

// mustShed says a view of holdings must not be kept beside the next
// snapshot: it would take more than a quarter of the soft memory limit,
// and the next pass or inspection needs about as much again. Without a
// limit nothing is shed.
func mustShed(holdings int, softLimit int64) bool {
	return limited(softLimit) && int64(holdings)*viewBytesPerHolding > softLimit/4
}

// limited says a soft memory limit is set (debug.SetMemoryLimit reports
// math.MaxInt64 when none is).
func limited(softLimit int64) bool { return softLimit > 0 && softLimit < math.MaxInt64 }

// Shed is called just before a pass or inspection reads its snapshot. When
// the published view is large for the process's memory limit (mustShed),
// it keeps only its summaries until the next view is built: the overview,
// the owners and the queue still answer; the holdings and task pages say
// they are being refreshed (503, Retry-After) instead of holding a second
// snapshot's worth of memory. Under a memory limit it first waits for a
// view being built, which holds its own snapshot: the pass then starts a
// little later (building a view takes a small part of a pass's time)
// rather than with two snapshots in memory.
func (s *Server) Shed() {
	limit := softMemoryLimit()
	if !limited(limit) {
		return
	}
	s.Wait()
	v := s.view.Load()
	if v == nil || v.ShedAt != nil || !mustShed(len(v.In.Plan.Holdings), limit) {
		return
	}
	s.store(v.summaries(time.Now()))
}

// summaries is the view without its inspection's snapshot and judgements,
// shed at `at`: what the pages show of it stays (counts, owners, causes,
// the queue), the holdings and tasks themselves go.
func (v *View) summaries(at time.Time) *View {
	light := *v
	in := v.In
	light.In = &reaper.Inspection{Snapshot: judge.Snapshot{Now: in.Snapshot.Now}, Plan: judge.Plan{Guards: in.Plan.Guards},
		Policy: in.Policy, Kubernetes: in.Kubernetes, ActiveOwners: in.ActiveOwners, Ignored: in.Ignored}
	light.holdingCount, light.taskCount = v.Current(), len(in.Plan.Tasks)
	light.released, light.byKey = nil, nil
	light.ShedAt = &at
	return &light
}

// HoldingCount is how many holdings are held after the view's pass: those
// of its snapshot less those the pass released.
func (v *View) HoldingCount() int {
	if v.ShedAt != nil {
		return v.holdingCount
	}
	return v.Current()
}

// TaskCount is how many tasks the view's snapshot judged.
func (v *View) TaskCount() int {
	if v.ShedAt != nil {
		return v.taskCount
	}
	return len(v.In.Plan.Tasks)
}

// refreshing answers a page that needs the holdings themselves while the
// view is shed: 503 with Retry-After, the page reloading itself.
func (s *Server) refreshing(w http.ResponseWriter, r *http.Request, v *View, nav string) bool {
	if v.ShedAt == nil {
		return false
	}
	w.Header().Set("Retry-After", "5")
	s.render(w, r, http.StatusServiceUnavailable, "refreshing", page{Title: "Being refreshed", Nav: nav, View: v})
	return true
}

// Inspection waits for a view being built and returns the published view's
// inspection; nil before the first view or once the view is shed. The
// daemon's doctor judges it instead of reading a snapshot of its own.
func (s *Server) Inspection() *reaper.Inspection {
	s.Wait()
	v := s.view.Load()
	if v == nil || v.ShedAt != nil {
		return nil
	}
	return v.In
}

// KeepsSnapshot says whether a pass's snapshot, with findings stale
// holdings, is to be kept through the pass's writes for the page to judge
// again. Under a memory limit a pass with many findings holds their
// judgements and its writes' state: the snapshot kept beside them did not
// fit, so the page reads an inspection of its own once the pass is over
// (inspectAfter), which also shows Redis as the pass left it.
func (s *Server) KeepsSnapshot(findings int) bool {
	return !mustShed(findings, softMemoryLimit())
}

// inspectAfter reads the inspection a pass's view is built of when the
// page did not keep the pass's snapshot; nil when it cannot be read (the
// last view stays, with the pass's report).
func (s *Server) inspectAfter(ctx context.Context, rep *reaper.Report) *reaper.Inspection {
	registryOnly := rep != nil && !rep.Scanned.FullScan
	in, err := s.src.Inspect(ctx, reaper.InspectOptions{RegistryOnly: registryOnly})
	if err != nil {
		s.opts.Logger.Warn("status page: inspection after the pass not read", slog.String("error", err.Error()))
		return nil
	}
	return in
}
