package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
)

// Target is one of the performance targets and whether the run met it.
type Target struct {
	Name  string  `json:"name"`
	Goal  string  `json:"goal"`
	Value float64 `json:"value"`
	Shown string  `json:"shown"`
	Met   bool    `json:"met"`
}

// Tolerances of the flatness check. Flat means the pass sends the same
// commands whatever the number of unrelated keys; its wall time may still
// grow a little, since each of those commands looks its key up in a main
// dictionary ten times larger (measured 0.95-1.27x while the baseline grew
// 6-7x), and by the noise of a shared machine. The round trips may differ by
// one or two, as the few keys that hold sets (each costing one more round
// trip for its batch) fall into the batches.
const (
	flatTolerance       = 1.5
	flatRoundTripsSlack = 0.02
)

func (r *Results) byName(name string) *Measurement {
	for i := range r.Measurements {
		if r.Measurements[i].Name == name {
			return &r.Measurements[i]
		}
	}
	return nil
}

// finish computes the ratios to the baseline and checks the targets.
func (r *Results) finish() {
	// The read-only phases were compared with the baseline of their own
	// round; the real pass, which runs once, with the baseline's median.
	if base, d := r.byName(phaseBaseline), r.byName(phaseOnce); base != nil && d != nil && base.WallMS > 0 {
		d.RatioToBaseline = round2(d.WallMS / base.WallMS)
	}
	if a := r.byName(phaseAudit); a != nil {
		r.Targets = append(r.Targets, Target{Name: "audit vs baseline", Goal: "≤ 1.3×", Value: a.RatioToBaseline,
			Shown: fmt.Sprintf("%.2f×", a.RatioToBaseline), Met: a.RatioToBaseline <= 1.3})
	}
	if c, c10 := r.byName(phaseRegistryReaped), r.byName(phaseRegistryScaled); c != nil && c10 != nil && c.WallMS > 0 {
		growth := round2(c10.WallMS / c.WallMS)
		same := c.RedisCommands == c10.RedisCommands && c.KeysScanned == c10.KeysScanned &&
			math.Abs(float64(c10.RedisRoundTrips-c.RedisRoundTrips)) <= flatRoundTripsSlack*float64(c.RedisRoundTrips)
		r.Targets = append(r.Targets, Target{Name: "registry-only, unrelated keys ×" + fmt.Sprint(r.Fleet.ScaledUnrelated/max(r.Fleet.UnrelatedKeys, 1)),
			Goal: fmt.Sprintf("flat: same commands and keys, round trips ±%.0f%%, wall ≤ %.2f×", 100*flatRoundTripsSlack, flatTolerance), Value: growth,
			Shown: fmt.Sprintf("%.2f× wall, commands %d → %d, round trips %d → %d", growth, c.RedisCommands, c10.RedisCommands, c.RedisRoundTrips, c10.RedisRoundTrips),
			Met:   same && growth <= flatTolerance})
	}
	if d := r.byName(phaseOnce); d != nil {
		r.Targets = append(r.Targets, Target{Name: "once: release rate", Goal: "≥ 50,000 holdings/s", Value: d.ReleasedPerSecond,
			Shown: fmt.Sprintf("%s holdings/s (%d in %.0f ms: %d release calls, %.0f ms in them, the slowest %.0f ms)",
				thousands(int64(d.ReleasedPerSecond)), d.Released, d.ReleasePhaseMS, d.ReleaseCalls, d.ReleaseCallsMS, d.SlowestReleaseMS),
			Met: d.ReleasedPerSecond >= 50_000})
	}
	// The live heap (what the collector found reachable at its peak)
	// decides. Heap in use adds the garbage not yet collected, which the
	// collector lets grow to GOGC% of the live heap before it runs: a
	// setting, not the design; the baseline, which keeps nothing per
	// holding, shows as much of it.
	var worst *Measurement
	for _, name := range []string{phaseAudit, phaseRegistry, phaseOnce} {
		if m := r.byName(name); m != nil && (worst == nil || m.HeapLivePerHolding > worst.HeapLivePerHolding) {
			worst = m
		}
	}
	if worst != nil {
		garbage := ""
		if b := r.byName(phaseBaseline); b != nil && b.Holdings > 0 {
			garbage = fmt.Sprintf("; in use %.0f B, the baseline's %.0f B", worst.HeapInusePerHolding, float64(b.PeakHeapInuseBytes)/float64(b.Holdings))
		}
		r.Targets = append(r.Targets, Target{Name: "peak heap per holding", Goal: "≤ 300 B live", Value: round2(worst.HeapLivePerHolding),
			Shown: fmt.Sprintf("%.0f B live (%s)%s", worst.HeapLivePerHolding, worst.Name, garbage),
			Met:   worst.HeapLivePerHolding <= 300})
	}
	var queries []string
	sameReads := true
	var first int64 = -1
	for _, name := range []string{phaseAudit, phaseRegistry, phaseRegistryReaped, phaseRegistryScaled} {
		if m := r.byName(name); m != nil {
			queries = append(queries, fmt.Sprintf("%s %d", name, m.DBQueries))
			if first >= 0 && m.DBQueries != first {
				sameReads = false
			}
			first = m.DBQueries
		}
	}
	if d := r.byName(phaseOnce); d != nil {
		queries = append(queries, fmt.Sprintf("once %d (%d task updates, %d per statement)", d.DBQueries, d.TasksUpdated, r.Fleet.BatchSize))
	}
	if len(queries) > 0 {
		r.Targets = append(r.Targets, Target{Name: "database queries per pass", Goal: "independent of the number of locks",
			Value: float64(first), Shown: strings.Join(queries, "; "), Met: sameReads})
	}
}

func round2(f float64) float64 { return float64(int64(f*100+0.5)) / 100 }

func thousands(n int64) string {
	s := fmt.Sprint(n)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

func mib(b uint64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

func writeMarkdown(w io.Writer, r *Results) error {
	var b strings.Builder
	mc, f := r.Machine, r.Fleet
	fmt.Fprintf(&b, "Machine: %d CPUs (%s), GOMAXPROCS %d, %s, Redis %s, PostgreSQL %s\n\n", mc.CPUs, mc.CPUModel, mc.GOMAXPROCS, mc.Go, mc.Redis, mc.PostgreSQL)
	z := r.Sizes
	fmt.Fprintf(&b, "Types: a pass keeps a Holding (%d B) of every lock and a Task (%d B) of every task lock, and a Judgement (%d B) of each finding only, which the report keeps as its Finding.\n\n",
		z.Holding, z.Task, z.Judgement)
	fmt.Fprintf(&b, "Fleet: %s keys in Redis (%s unrelated), %s task locks with %d exclusive lock(s) each, %d shared domain sets, %d owners (%d dead), "+
		"%s stale and %s healthy holdings, %s lost tasks; built in %.1f s. scan_count %d, batch_size %d.\n\n",
		thousands(f.KeysInRedis), thousands(int64(f.UnrelatedKeys)), thousands(int64(f.TaskLocks)), f.ExclusivePerTask, f.Domains, f.Owners, f.DeadOwners,
		thousands(int64(f.StaleHoldings)), thousands(int64(f.HealthyHoldings)), thousands(int64(f.LostTasks)), f.BuildSeconds, f.ScanCount, f.BatchSize)
	b.WriteString("| phase | unrelated keys | wall (median) | × baseline | Redis round trips | Redis commands | Redis CPU | Redis server time | reaper CPU | DB queries | holdings | peak heap in use | per holding | peak live heap | per holding | released | per s (release phase) |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, m := range r.Measurements {
		ratio, perIn, perLive, rel, rate := "", "", "", "", ""
		if m.RatioToBaseline > 0 {
			ratio = fmt.Sprintf("%.2f", m.RatioToBaseline)
		}
		if m.Name != phaseBaseline && m.Name != phaseBaselineScaled && m.Holdings > 0 {
			perIn, perLive = fmt.Sprintf("%.0f B", m.HeapInusePerHolding), fmt.Sprintf("%.0f B", m.HeapLivePerHolding)
		}
		if m.Released > 0 {
			rel, rate = thousands(int64(m.Released)), thousands(int64(m.ReleasedPerSecond))
		}
		fmt.Fprintf(&b, "| %s | %s | %.0f ms | %s | %s | %s | %.0f ms | %.1f ms | %.0f ms | %d | %s | %s | %s | %s | %s | %s | %s |\n",
			m.Name, thousands(int64(m.UnrelatedKeysInRedis)), m.WallMS, ratio, thousands(m.RedisRoundTrips), thousands(m.RedisCommands), m.RedisCPUMS, m.RedisServerMS, m.CPUMS, m.DBQueries,
			thousands(int64(m.Holdings)), mib(m.PeakHeapInuseBytes), perIn, mib(m.PeakHeapLiveBytes), perLive, rel, rate)
	}
	b.WriteString("\n| target | goal | measured | met |\n|---|---|---|---|\n")
	for _, t := range r.Targets {
		met := "yes"
		if !t.Met {
			met = "**no**"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", t.Name, t.Goal, t.Shown, met)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func writeJSON(path string, r any) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("encode results: %w", err)
	}
	if err := os.WriteFile(path, append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("write results: %w", err)
	}
	return nil
}
