package main

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/lock-reaper/lock-reaper/reaper"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
)

// session is one benchmark run over one fleet: the phases in the order they
// must run, since the last one changes the fleet.
type session struct {
	o     options
	h     *harness
	admin *redis.Client
	prof  *profiler
	logf  func(string, ...any)
	res   *Results
}

func (s *session) add(ms []Measurement, unrelated int) {
	for _, m := range ms {
		m.UnrelatedKeysInRedis = unrelated
		s.res.Measurements = append(s.res.Measurements, m)
		s.logf("%-22s %10.1f ms (median)  %7d round trips  %3d queries", m.Name, m.WallMS, m.RedisRoundTrips, m.DBQueries)
	}
}

func (s *session) baselinePhase(ctx context.Context, name, desc string) phase {
	return phase{name, desc, func() (phaseRun, error) { return s.h.baseline(ctx) }}
}

func (s *session) passPhase(ctx context.Context, name, desc string, opts reaper.Options) phase {
	return phase{name, desc, func() (phaseRun, error) { return s.h.checked(ctx, opts) }}
}

// readOnly measures the baseline, the audit and the registry-only audit in
// rounds, then profiles the chosen one alone.
func (s *session) readOnly(ctx context.Context) error {
	phases := []phase{
		s.baselinePhase(ctx, phaseBaseline, "SCAN + pipelined TYPE/GET of the lock keys"),
		s.passPhase(ctx, phaseAudit, "audit: full pass, dry run", reaper.Options{Mode: reaper.ModeAudit}),
		s.passPhase(ctx, phaseRegistry, "audit --registry-only", reaper.Options{Mode: reaper.ModeAudit, RegistryOnly: true}),
	}
	ms, err := rounds(s.o.runs, phases, s.logf)
	if err != nil {
		return err
	}
	s.add(ms, s.o.unrelated)
	for _, ph := range phases {
		if ph.name == s.o.profile && (s.o.cpuProfile != "" || s.o.memProfile != "") {
			return repeat(s.o.runs, ph, s.prof.phase)
		}
	}
	return nil
}

// scaled measures the registry-only audit of the reaped fleet, then grows
// the unrelated keys and measures it and the baseline again. It comes last:
// deleting millions of keys would leave Redis freeing and rehashing them
// under whatever ran next.
func (s *session) scaled(ctx context.Context) error {
	if s.o.scaleFactor <= 1 {
		return nil
	}
	registryOnly := reaper.Options{Mode: reaper.ModeAudit, RegistryOnly: true}
	ms, err := rounds(s.o.runs, []phase{
		s.passPhase(ctx, phaseRegistryReaped, "audit --registry-only, after the real pass", registryOnly),
	}, s.logf)
	if err != nil {
		return err
	}
	s.add(ms, s.o.unrelated)
	extra := s.o.unrelated * (s.o.scaleFactor - 1)
	s.logf("adding %d unrelated keys", extra)
	if err := addUnrelated(ctx, s.admin, extra); err != nil {
		return err
	}
	ms, err = rounds(s.o.runs, []phase{
		s.baselinePhase(ctx, phaseBaselineScaled, fmt.Sprintf("baseline, %dx unrelated keys", s.o.scaleFactor)),
		s.passPhase(ctx, phaseRegistryScaled, fmt.Sprintf("audit --registry-only, after the real pass, %dx unrelated keys", s.o.scaleFactor), registryOnly),
	}, s.logf)
	if err != nil {
		return err
	}
	s.add(ms, s.o.unrelated*s.o.scaleFactor)
	return nil
}

// once measures the real pass. It changes the fleet, so it runs once, last,
// and is profiled while it is measured; an audit afterwards must find
// nothing left to do.
func (s *session) once(ctx context.Context) error {
	stop := s.prof.phase(phaseOnce)
	r, err := s.h.checked(ctx, reaper.Options{Mode: reaper.ModeOnce})
	stop()
	if err != nil {
		return fmt.Errorf("%s: %w", phaseOnce, err)
	}
	s.add([]Measurement{summarise(phaseOnce, "once: full pass releasing the stale holdings", []phaseRun{r})}, s.o.unrelated)
	return s.h.checkReaped(ctx)
}

// checked runs a pass and checks that it found (audit) or did (once) exactly
// what the fleet's manifest says a correct reaper does: a benchmark of a
// reaper that got the answer wrong would measure nothing.
func (h *harness) checked(ctx context.Context, opts reaper.Options) (phaseRun, error) {
	r, err := h.pass(ctx, opts)
	if err != nil {
		return r, err
	}
	s, m := r.report.Summary, h.fleet
	stale, lost := m.StaleHoldings, m.LostTasks
	if h.reaped {
		stale, lost = 0, 0
	}
	got := s.Released
	if opts.Mode == reaper.ModeAudit {
		got = s.FindingsByResult[reaper.ResultWouldRelease]
	}
	// Legacy locks have no registry entry: a registry-only pass misses them
	// by design.
	seesAll := !opts.RegistryOnly || !h.legacyLocks
	if seesAll && got != stale {
		return r, fmt.Errorf("%s pass: %d holdings to release, the fleet has %d stale ones", opts.Mode, got, stale)
	}
	if n := s.TasksByVerdict[judge.VerdictLost]; n != lost {
		return r, fmt.Errorf("%s pass: %d lost tasks, the fleet has %d", opts.Mode, n, lost)
	}
	if opts.Mode == reaper.ModeOnce && s.TasksUpdated != lost {
		return r, fmt.Errorf("once pass: %d tasks updated, the fleet has %d lost ones", s.TasksUpdated, lost)
	}
	if len(r.report.Guards) > 0 {
		return r, fmt.Errorf("%s pass: guard %s held work back: %s", opts.Mode, r.report.Guards[0].Name, r.report.Guards[0].Reason)
	}
	return r, nil
}

// checkReaped audits after the real pass: nothing may be left to do.
func (h *harness) checkReaped(ctx context.Context) error {
	rep, err := h.reaper.RunOnce(ctx, reaper.Options{Mode: reaper.ModeAudit})
	if err != nil {
		return fmt.Errorf("audit after the real pass: %w", err)
	}
	if n := len(rep.Findings) + len(rep.Tasks); n > 0 {
		return fmt.Errorf("audit after the real pass: %d findings and tasks left", n)
	}
	h.reaped = true
	return nil
}
