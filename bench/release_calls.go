package main

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lock-reaper/lock-reaper/reaper/judge"
	"github.com/lock-reaper/lock-reaper/reaper/redislocks"
)

// ReleaseCalls is the server time of the release script's calls of a phase,
// one by one, from the SLOWLOG of the bench's own server: each a client's
// EVALSHA of the script's SHA (loadReleaseScript makes sure none is the
// EVAL that loads it). The SLOWLOG's threshold stays at slowlogThreshold
// rather than 0: a script's own commands are logged apart too, each entry
// made inside the script's call, and logging all of them would lengthen
// the very calls measured (BENCHMARKS.md, "How the cost grows"). A call
// under the threshold is not logged; ScriptCallsUnder counts those of every
// script together (commandstats less the SLOWLOG), which nothing here tells
// apart. Over the threshold every figure is exact.
type ReleaseCalls struct {
	// Logged counts the release script's calls of slowlogThreshold or more.
	Logged int `json:"calls_logged"`
	// MedianUS, P90US and MaxUS are of the logged calls (nearest rank).
	MedianUS int64 `json:"median_us"`
	P90US    int64 `json:"p90_us"`
	MaxUS    int64 `json:"max_us"`
	// OverBound counts the calls over callBound; TotalMS sums the logged ones.
	OverBound int     `json:"calls_over_bound"`
	TotalMS   float64 `json:"total_ms"`
	// ScriptCallsUnder counts the calls of any script (EVAL and EVALSHA in
	// commandstats) that the SLOWLOG did not log: each under its threshold.
	ScriptCallsUnder int64 `json:"script_calls_under_threshold"`
}

// releaseCalls sums up the release script's calls among a phase's SLOWLOG
// entries, and the script calls the SLOWLOG missed: scripts were called
// calls times (commandstats). Nil when the phase made no script call.
func releaseCalls(slow []redis.SlowLog, scripts int64) *ReleaseCalls {
	var us []int64
	var logged int64
	for _, e := range slow {
		if len(e.Args) < 2 || strings.HasPrefix(e.ClientAddr, "?") {
			continue
		}
		switch strings.ToLower(e.Args[0]) {
		case "evalsha":
			logged++
			if e.Args[1] == redislocks.ReleaseScriptSHA() {
				us = append(us, e.Duration.Microseconds())
			}
		case "eval":
			logged++
		}
	}
	if scripts == 0 && logged == 0 {
		return nil
	}
	rc := &ReleaseCalls{Logged: len(us), ScriptCallsUnder: max(scripts-logged, 0)}
	if len(us) == 0 {
		return rc
	}
	slices.Sort(us)
	rc.MedianUS, rc.P90US, rc.MaxUS = nearestRank(us, 0.5), nearestRank(us, 0.9), us[len(us)-1]
	var total int64
	for _, u := range us {
		total += u
		if time.Duration(u)*time.Microsecond > callBound {
			rc.OverBound++
		}
	}
	rc.TotalMS = round2(float64(total) / 1000)
	return rc
}

// nearestRank is the p-th quantile of sorted xs, the smallest value with at
// least p of them at or below it.
func nearestRank(sorted []int64, p float64) int64 {
	i := int(math.Ceil(p*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// loadReleaseScript has the server load the release script before any phase
// is measured, so that every release call of a pass is an EVALSHA its SHA
// names in the SLOWLOG: the first call of a script the server lacks is an
// EVAL, whose logged text does not tell which script it is. It runs the
// script once on a key that is no lock and does not exist: nothing is
// written.
func loadReleaseScript(ctx context.Context, rdb *redis.Client) error {
	rel := &redislocks.Releaser{RDB: rdb, Timeout: time.Minute}
	_, err := rel.Release(ctx, redislocks.Batch{
		Holdings: []judge.Holding{{Key: "lr-bench:no-lock", Owner: "lr-bench", Kind: judge.KindExclusive}},
		Guarded:  []bool{false},
	})
	if err != nil {
		return fmt.Errorf("load the release script into the bench's redis-server: %w", err)
	}
	return nil
}
