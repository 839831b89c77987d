package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"time"

	"github.com/lock-reaper/lock-reaper/internal/sim"
	"github.com/lock-reaper/lock-reaper/internal/status"
	"github.com/lock-reaper/lock-reaper/reaper"
)

// scenarioStatusPage measures the status page over one dead owner holding
// every lock: each page's server time against the inspection the page's
// view is made of, in the same run.
const scenarioStatusPage = "status-page"

// The status page's incident: 200,000 holdings of one dead owner (task
// locks and exclusive resource locks, half and half), a queue beside them.
const (
	statusTaskLocks = 100_000
	statusQueued    = 2_000
	// statusPageTarget is the most server time any page may take.
	statusPageTarget = time.Second
)

// StatusPageResults is what the status-page scenario measured.
type StatusPageResults struct {
	Machine  Machine          `json:"machine"`
	Holdings int              `json:"holdings"`
	Queued   int              `json:"queued"`
	Inspect  float64          `json:"inspect_ms"`
	Build    float64          `json:"view_build_ms"`
	Pages    []StatusPageTime `json:"pages"`
	Met      bool             `json:"target_met"`
	// The heap over the runs, as `lock-reaper status` holds it: each
	// inspection read and judged while the last one's view is served. The
	// peaks are above the heap before the first run; ViewLive is the live
	// heap the published view holds between inspections.
	PeakInuseBytes uint64 `json:"peak_heap_inuse_bytes"`
	PeakLiveBytes  uint64 `json:"peak_live_heap_bytes"`
	ViewLiveBytes  uint64 `json:"view_live_heap_bytes"`
}

// StatusPageTime is one page's median server time over the runs.
type StatusPageTime struct {
	Page string  `json:"page"`
	MS   float64 `json:"ms"`
	// VsInspect is the page's time over the inspection's.
	VsInspect float64 `json:"vs_inspect"`
	Bytes     int     `json:"bytes"`
	// AllocBytes is what serving the page allocated, at its first fetch:
	// what one person opening it costs the process.
	AllocBytes uint64 `json:"alloc_bytes"`
}

func runStatusPage(ctx context.Context, o options, stdout io.Writer, logf func(string, ...any)) error {
	e, err := newEnv(ctx, o.redisURL, o.databaseURL)
	if err != nil {
		return err
	}
	defer e.close()
	rdb, pool, err := e.clients(ctx)
	if err != nil {
		return err
	}
	defer rdb.Close()
	defer pool.Close()
	spec := sim.IncidentOf20260724()
	spec.DeadTaskLocks, spec.DeadResourceLocks, spec.QueuedTasks = statusTaskLocks, statusTaskLocks, statusQueued
	spec.DeadRunning, spec.DeadClaimed, spec.LegacyFraction = 10, 10, 0
	logf("building the incident: %d task locks and %d resource holdings of one dead owner, %d queued tasks", spec.DeadTaskLocks, spec.DeadResourceLocks, spec.QueuedTasks)
	inc, err := sim.BuildIncident(ctx, rdb, pool, spec)
	if err != nil {
		return fmt.Errorf("build the incident: %w", err)
	}
	stopBeat := inc.KeepAliveInBackground(context.WithoutCancel(ctx), pool)
	defer func() { _ = stopBeat() }()
	cfg := reaper.DefaultConfig()
	cfg.HeartbeatRecheck = benchRecheck
	r, err := reaper.New(cfg, rdb, pool, nil)
	if err != nil {
		return err
	}
	srv := status.New(r, status.Options{})
	res := &StatusPageResults{Machine: describeMachine(), Queued: spec.QueuedTasks + spec.QueuedDomainExclusive}
	var inspects, builds []float64
	heap := startHeapSampler()
	for range o.runs {
		srv.Shed() // as `lock-reaper status` does before each inspection
		start := time.Now()
		in, err := r.Inspect(ctx, reaper.InspectOptions{})
		if err != nil {
			return err
		}
		took := time.Since(start)
		srv.Publish(ctx, in, took, time.Time{})
		inspects, builds = append(inspects, ms(took)), append(builds, ms(time.Since(start)-took))
	}
	res.Inspect, res.Build = median(inspects), median(builds)
	res.PeakInuseBytes, res.PeakLiveBytes = heap.finish()
	_, res.ViewLiveBytes = readHeap()
	res.ViewLiveBytes -= min(res.ViewLiveBytes, heap.baseLive)
	logf("heap over %d inspections: peak in use %s, peak live %s; the view holds %s live", o.runs,
		mib(res.PeakInuseBytes), mib(res.PeakLiveBytes), mib(res.ViewLiveBytes))
	v := srv.View()
	res.Holdings = len(v.Holdings())
	blocked := ""
	for _, q := range v.Queue {
		if q.Blocked() {
			blocked = q.Row.ID
			break
		}
	}
	owner := url.QueryEscape(inc.DeadOwner)
	pages := []string{"/", "/queue", "/queue?blocked=1&page=10", "/owners", "/holdings", "/holdings?page=4000",
		"/holdings?owner=" + owner + "&page=2000", "/holdings?verdict=owner-dead&page=1500",
		"/holdings?resource=" + url.QueryEscape(sim.DomainPRN(sim.DefaultDomainID)), "/holdings?task=" + blocked, "/tasks/" + blocked,
		"/passes", "/lost-tasks?page=1000"}
	res.Met = true
	for _, p := range pages {
		var times []float64
		size := 0
		var alloc uint64
		for i := range o.runs {
			rec := httptest.NewRecorder()
			req := httptest.NewRequest(http.MethodGet, p, nil)
			var before, after runtime.MemStats
			if i == 0 {
				runtime.ReadMemStats(&before)
			}
			start := time.Now()
			srv.ServeHTTP(rec, req)
			times = append(times, ms(time.Since(start)))
			if i == 0 {
				runtime.ReadMemStats(&after)
				alloc = after.TotalAlloc - before.TotalAlloc
			}
			if rec.Code != http.StatusOK {
				return fmt.Errorf("GET %s: %d", p, rec.Code)
			}
			size = rec.Body.Len()
			// The task page is cached for seconds: each run after the first
			// measures the cache, the first the explanation itself.
		}
		t := StatusPageTime{Page: p, MS: median(times), Bytes: size, AllocBytes: alloc}
		if p == "/tasks/"+blocked {
			t.MS = times[0]
		}
		t.VsInspect = math.Round(t.MS/res.Inspect*1000) / 1000
		res.Met = res.Met && t.MS < ms(statusPageTarget)
		res.Pages = append(res.Pages, t)
		logf("%-60s %8.1f ms  %7d bytes, %s allocated", p, t.MS, size, mib(alloc))
	}
	if err := writeStatusPageMarkdown(stdout, res); err != nil {
		return err
	}
	if o.jsonPath != "" {
		return writeJSON(o.jsonPath, res)
	}
	return nil
}

func writeStatusPageMarkdown(w io.Writer, r *StatusPageResults) error {
	_, err := fmt.Fprintf(w, "Status page over %s holdings of one dead owner, %d queued tasks (%s, %d CPUs)\n\n"+
		"Inspection (the read a view is made of): %.1f ms; building the view from it: %.1f ms\n\n"+
		"Heap over the inspections (above the heap before them): peak in use %s, peak live %s; the published view holds %s live\n\n"+
		"| page | server time (median) | vs the inspection | bytes | allocated (first fetch) |\n| --- | ---: | ---: | ---: | ---: |\n",
		thousands(int64(r.Holdings)), r.Queued, r.Machine.CPUModel, r.Machine.CPUs, r.Inspect, r.Build, mib(r.PeakInuseBytes), mib(r.PeakLiveBytes), mib(r.ViewLiveBytes))
	if err != nil {
		return err
	}
	for _, p := range r.Pages {
		if _, err := fmt.Fprintf(w, "| `%s` | %.1f ms | %.3f× | %d | %s |\n", p.Page, p.MS, p.VsInspect, p.Bytes, mib(p.AllocBytes)); err != nil {
			return err
		}
	}
	verdict := "met"
	if !r.Met {
		verdict = "MISSED"
	}
	_, err = fmt.Fprintf(w, "\nTarget: every page under %v of server time: %s\n", statusPageTarget, verdict)
	return err
}
