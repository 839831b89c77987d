package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/lock-reaper/lock-reaper/reaper"
)

// outsideThePass names what a child's wall time holds besides its pass's
// phases: the process's start, its connections, the report's printing and
// the exit.
const outsideThePass = "start, connections, printing the report, exit"

// writePhaseBreakdown writes where the binary's time went, phase by phase,
// as the medians over the rounds of its reports' phase times, beside the
// walk's and the baseline read's: what stands between a pass and one walk.
// Nothing is written for a binary that reports no phase times.
func writePhaseBreakdown(b *strings.Builder, binary string, rounds []IncidentRound, pick func(IncidentRound) *IncidentPasses) {
	var order []string
	per := map[string]map[string][]float64{"audit": {}, "once": {}}
	var walks, baselines []float64
	for _, rd := range rounds {
		audit, once := pick(rd).Audit, pick(rd).Once
		if len(audit.Phases) == 0 || len(once.Phases) == 0 {
			return
		}
		walks, baselines = append(walks, rd.WalkMS), append(baselines, rd.BaselineMS)
		for mode, run := range map[string]childRun{"audit": audit, "once": once} {
			inside := 0.0
			for _, p := range run.Phases {
				if !slices.Contains(order, p.Phase) {
					order = append(order, p.Phase)
				}
				per[mode][p.Phase] = append(per[mode][p.Phase], p.MS)
				inside += p.MS
			}
			per[mode][outsideThePass] = append(per[mode][outsideThePass], run.WallMS-inside)
		}
	}
	order = phaseOrder(order)
	order = append(order, outsideThePass)
	fmt.Fprintf(b, "\nWhere binary %s's time went, the median over the rounds of each phase its reports time (`phase_times`), and of the wall time outside them; the walk %.1f ms and the baseline read %.1f ms in the same rounds:\n\n",
		binary, median(walks), median(baselines))
	b.WriteString("| phase | `audit` | `once` |\n|---|---:|---:|\n")
	for _, ph := range order {
		cell := func(mode string) string {
			if v := per[mode][ph]; len(v) > 0 {
				return fmt.Sprintf("%.1f ms", median(v))
			}
			return "—"
		}
		fmt.Fprintf(b, "| %s | %s | %s |\n", ph, cell("audit"), cell("once"))
	}
}

// phaseOrder puts the phases in the order a pass runs them.
func phaseOrder(seen []string) []string {
	known := []string{reaper.TimeChecks, reaper.TimeRedisRead, reaper.TimeDatabaseRead, reaper.TimeSecondRead,
		reaper.TimeSignalCheck, reaper.TimeJudge, reaper.TimeWrites, reaper.TimeRecord}
	var out []string
	for _, k := range known {
		if slices.Contains(seen, k) {
			out = append(out, k)
		}
	}
	for _, s := range seen {
		if !slices.Contains(known, s) {
			out = append(out, s)
		}
	}
	return out
}
