package main

import (
	"time"

	"github.com/lock-reaper/lock-reaper/reaper"
)

// benchRecheck is the bench's heartbeat_recheck. A pass that finds a row
// dead reads the heartbeats again a heartbeat period later (10 s for a
// worker) before it acts: a wait, not work. The bench's dead rows never
// write again, so its passes wait this long instead and the figures are of
// the work (BENCHMARKS.md says so). `run` settles on its own heartbeat
// reads and waits for none.
const benchRecheck = 100 * time.Millisecond

// benchConfig is the default configuration with the bench's recheck.
func benchConfig() reaper.Config {
	cfg := reaper.DefaultConfig()
	cfg.HeartbeatRecheck = benchRecheck
	return cfg
}
