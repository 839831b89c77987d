package doctor

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/lock-reaper/lock-reaper/heartbeat"
	"github.com/lock-reaper/lock-reaper/reaper/pulpdb"
)

// Bounds of a plausible heartbeat, on the database clock.
const (
	// futureTolerance allows for the time between a worker reading its clock
	// and the row being read back.
	futureTolerance = time.Second
	// behindLimit: pulpcore deletes the rows of missing processes, so a row
	// this old is a process long gone that nothing cleans up, or a clock far
	// behind.
	behindLimit = 24 * time.Hour
)

func checkHeartbeatClock(ctx context.Context, t Target) Result {
	tx, err := t.Postgres.BeginTx(ctx, pgx.TxOptions{AccessMode: pgx.ReadOnly})
	if err != nil {
		return couldNotCheck("read core_appstatus", err, "check that database.url reaches pulpcore's database.")
	}
	// Rollback's error is dropped: read-only.
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	rows, err := pulpdb.ReadAppStatuses(ctx, tx)
	if err != nil {
		return couldNotCheck("read core_appstatus", err, grantFix(err))
	}
	var now time.Time
	if err := tx.QueryRow(ctx, "SELECT now()").Scan(&now); err != nil {
		return couldNotCheck("read the database clock", err, "check that database.url reaches pulpcore's database.")
	}
	res := evalHeartbeats(rows, now)
	if res.Status != OK || t.HeartbeatWatch <= 0 {
		return res
	}
	return evalBehind(watchHeartbeats(ctx, t, heartbeat.Reading{Now: now, Rows: rows}), res)
}

// ClockBehindMargin is how far behind the database's clock a heartbeat may
// land before the check warns: a write takes a moment.
const ClockBehindMargin = 5 * time.Second

// watchHeartbeats reads the rows every second for t.HeartbeatWatch, within
// the check's deadline, after first, and returns every read. A read that
// fails ends the watch.
func watchHeartbeats(ctx context.Context, t Target, first heartbeat.Reading) []heartbeat.Reading {
	reads := []heartbeat.Reading{first}
	end := time.Now().Add(t.HeartbeatWatch)
	if dl, ok := ctx.Deadline(); ok && dl.Add(-time.Second).Before(end) {
		end = dl.Add(-time.Second)
	}
	for {
		wait := min(time.Second, time.Until(end))
		if wait <= 0 {
			return reads
		}
		select {
		case <-ctx.Done():
			return reads
		case <-time.After(wait):
		}
		rd, err := pulpdb.ReadHeartbeats(ctx, t.Postgres, time.Second)
		if err != nil {
			return reads
		}
		reads = append(reads, rd)
	}
}

// evalBehind warns of the rows whose heartbeats moved while the check
// watched and landed more than ClockBehindMargin behind the database's
// clock: pulpcore stamps last_heartbeat with the worker's clock, so one
// behind by more than its ttl looks dead to pulpcore's own cleanup while it
// works (lock-reaper sees it move and keeps it alive).
func evalBehind(reads []heartbeat.Reading, res Result) Result {
	names := map[string]heartbeat.AppStatus{}
	for _, r := range reads[len(reads)-1].Rows {
		names[r.ID] = r
	}
	var behind []string
	for id, d := range heartbeat.Behind(reads) {
		if r := names[id]; d > ClockBehindMargin {
			behind = append(behind, fmt.Sprintf("%s %q at least %s behind", r.AppType, r.Name, d.Round(time.Second)))
		}
	}
	if len(behind) == 0 {
		res.Evidence += fmt.Sprintf("; watched for %s, no heartbeat landed more than %s behind it", reads[len(reads)-1].Now.Sub(reads[0].Now).Round(time.Second), ClockBehindMargin)
		return res
	}
	sort.Strings(behind)
	return Result{Status: Warn, Evidence: fmt.Sprintf("%s; %d heartbeats land behind the database clock (%s): a worker behind by more than its ttl looks dead to pulpcore's cleanup while it works", res.Evidence, len(behind), listSome(behind, 5)),
		Fix: "synchronise the clocks of Pulp's hosts with the database's (NTP/chrony)."}
}

// evalHeartbeats looks for heartbeats the database clock makes implausible.
// Pulp's processes stamp last_heartbeat with their own clock: one ahead of
// the database keeps a dead worker "alive" past its death, one behind by
// more than its ttl makes a live worker look dead.
func evalHeartbeats(rows []heartbeat.AppStatus, now time.Time) Result {
	var future, behind []string
	for _, r := range rows {
		age := now.Sub(r.LastHeartbeat)
		switch {
		case -age > futureTolerance:
			future = append(future, fmt.Sprintf("%s %q %s ahead", r.AppType, r.Name, (-age).Round(time.Second)))
		case age > behindLimit:
			behind = append(behind, fmt.Sprintf("%s %q %s behind", r.AppType, r.Name, age.Round(time.Minute)))
		}
	}
	sort.Strings(future)
	sort.Strings(behind)
	evidence := fmt.Sprintf("%d core_appstatus rows on the database clock %s", len(rows), now.UTC().Format(time.RFC3339))
	switch {
	case len(future) > 0:
		e := fmt.Sprintf("%s: %d heartbeats in the future (%s)", evidence, len(future), listSome(future, 5))
		if len(behind) > 0 {
			e += fmt.Sprintf("; %d more than a day behind (%s)", len(behind), listSome(behind, 5))
		}
		return Result{Status: Warn, Evidence: e + ": a worker clock ahead keeps a dead worker alive for lock-reaper and pulpcore alike",
			Fix: "synchronise the clocks of Pulp's hosts with the database's (NTP/chrony)."}
	case len(behind) > 0:
		return Result{Status: Warn, Evidence: fmt.Sprintf("%s: %d heartbeats more than a day behind (%s): processes long gone that nothing cleans up, or clocks far behind", evidence, len(behind), listSome(behind, 5)),
			Fix: "check those hosts' clocks; rows of processes that are gone are removed by pulpcore's worker cleanup."}
	}
	return Result{Status: OK, Evidence: evidence + ": none ahead of it, none more than a day behind"}
}

// listSome joins the first n items and says how many more there are.
func listSome(items []string, n int) string {
	if len(items) <= n {
		return strings.Join(items, ", ")
	}
	return strings.Join(items[:n], ", ") + fmt.Sprintf(" and %d more", len(items)-n)
}
