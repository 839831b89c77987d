package main

import (
	"fmt"
	"io"
	"strings"
)

// writeScaleMarkdown writes the scaling table, each pass's load on Redis,
// and the slowest call of each command.
func writeScaleMarkdown(w io.Writer, r *ScaleResults) error {
	var b strings.Builder
	mc := r.Machine
	fmt.Fprintf(&b, "Machine: %d CPUs (%s), GOMAXPROCS %d, %s, Redis %s, PostgreSQL %s\n\n", mc.CPUs, mc.CPUModel, mc.GOMAXPROCS, mc.Go, mc.Redis, mc.PostgreSQL)
	fmt.Fprintf(&b, "Every row on a redis-server of its own (SLOWLOG over %d µs) and a database of its own; the walk in this process, each pass the real binary "+
		"(`--output json`, `%s=128Mi`, scan_count %d, batch_size %d, max_releases and max_task_updates lifted); walk and audit alternate in %d round(s), "+
		"once runs last. Pass times are the report's duration_ms (the bench's 100 ms heartbeat recheck included).\n\n",
		slowlogThreshold.Microseconds(), "REAPER_MEMORY_LIMIT", r.ScanCount, r.BatchSize, r.Runs)

	b.WriteString("| row | keys in Redis | lock keys | owners | largest shared set | holdings (stale) | walk | audit | × walk | once | × walk | peak RSS audit, once (anonymous) | within 128 MiB | Redis CPU: walk, audit, once |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|\n")
	for _, row := range r.Rows {
		f := row.Fleet
		fits := "yes"
		if row.Audit.PeakRSSBytes > rssLimit || row.Once.PeakRSSBytes > rssLimit {
			fits = "**no**"
		}
		if row.LimitMiB > 0 {
			fits += fmt.Sprintf(" (run under %dMi)", row.LimitMiB)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s (%s) | %.0f ms | %.0f ms | %.2f | %.0f ms | %.2f | %s, %s (%s, %s) | %s | %.0f, %.0f, %.0f ms |\n",
			row.Name, thousands(f.KeysInRedis), thousands(int64(row.LockKeys)), thousands(int64(f.Owners)), thousands(row.MembersPerSet),
			thousands(int64(f.StaleHoldings+f.HealthyHoldings)), thousands(int64(f.StaleHoldings)),
			row.WalkMS, row.Audit.WallMS, row.Audit.Ratio, row.Once.WallMS, row.Once.Ratio,
			mibShort(row.Audit.PeakRSSBytes), mibShort(row.Once.PeakRSSBytes), mibShort(row.Audit.PeakAnonBytes), mibShort(row.Once.PeakAnonBytes), fits,
			row.WalkServer.CPUMS, row.Audit.Server.CPUMS, row.Once.Server.CPUMS)
	}

	b.WriteString("\nEach pass's load on Redis: the pass's own count (the JSON report's `redis_load`) and the server's accounts (INFO cpu, INFO commandstats, SLOWLOG; " +
		"time in commands counts a script's commands twice, in the script's call and under their own names).\n\n")
	b.WriteString("| row | pass | keys scanned | SCAN calls | other commands | round trips | waited on Redis | server CPU | in commands | slowest call | calls over 5 ms |\n")
	b.WriteString("|---|---|---:|---:|---:|---:|---:|---:|---:|---|---:|\n")
	for _, row := range r.Rows {
		for _, p := range []struct {
			name string
			p    ScalePass
		}{{"walk", ScalePass{Server: row.WalkServer}}, {"audit", row.Audit}, {"once", row.Once}} {
			l := p.p.RedisLoad
			loadCells := fmt.Sprintf("%s | %s | %s | %s | %.0f ms", thousands(l.KeysScanned), thousands(l.ScanCalls), thousands(l.Commands), thousands(l.RoundTrips), l.WaitSeconds*1000)
			if p.name == "walk" {
				loadCells = " | | | | "
			}
			s := p.p.Server
			fmt.Fprintf(&b, "| %s | %s | %s | %.0f ms | %.0f ms | %s µs `%s` | %d |\n", row.Name, p.name, loadCells, s.CPUMS, s.CommandsMS, thousands(s.SlowestUS), s.Slowest, s.OverBound)
		}
	}

	writeReleaseCalls(&b, r)

	b.WriteString("\nThe slowest call of each command (SLOWLOG; a blank: no call took " + fmt.Sprint(slowlogThreshold.Microseconds()) + " µs), the median audit and the real pass:\n\n")
	b.WriteString("| row | pass | command | calls | time in it | slowest | over 5 ms |\n|---|---|---|---:|---:|---:|---:|\n")
	for _, row := range r.Rows {
		for _, p := range []struct {
			name string
			s    ServerLoad
		}{{"audit", row.Audit.Server}, {"once", row.Once.Server}} {
			for _, c := range p.s.Commands {
				slowest := ""
				if c.SlowestUS > 0 {
					slowest = thousands(c.SlowestUS) + " µs"
				}
				fmt.Fprintf(&b, "| %s | %s | %s | %s | %.1f ms | %s | %d |\n", row.Name, p.name, c.Command, thousands(c.Calls), c.TotalMS, slowest, c.OverBound)
			}
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeReleaseCalls is the table of the release script's calls, one line per
// pass that made any.
func writeReleaseCalls(b *strings.Builder, r *ScaleResults) {
	th := thousands(slowlogThreshold.Microseconds())
	fmt.Fprintf(b, "\nThe release script's calls one by one (SLOWLOG: each an EVALSHA of its SHA, the script loaded before the passes; a call under %s µs is not logged, "+
		"and counts among the script calls under it, every script's together, from commandstats):\n\n", th)
	fmt.Fprintf(b, "| row | pass | release calls ≥ %s µs | median | 90th percentile | slowest | over 5 ms | time in them | script calls under %s µs |\n", th, th)
	b.WriteString("|---|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, row := range r.Rows {
		for _, p := range []struct {
			name string
			s    ServerLoad
		}{{"audit", row.Audit.Server}, {"once", row.Once.Server}} {
			rc := p.s.ReleaseCalls
			if rc == nil || rc.Logged == 0 {
				continue
			}
			fmt.Fprintf(b, "| %s | %s | %s | %s µs | %s µs | %s µs | %d | %.1f ms | %s |\n", row.Name, p.name, thousands(int64(rc.Logged)),
				thousands(rc.MedianUS), thousands(rc.P90US), thousands(rc.MaxUS), rc.OverBound, rc.TotalMS, thousands(rc.ScriptCallsUnder))
		}
	}
}

func mibShort(n int64) string { return fmt.Sprintf("%.1f", float64(n)/(1<<20)) }
