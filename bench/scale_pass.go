package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/lock-reaper/lock-reaper/internal/exitcode"
	"github.com/lock-reaper/lock-reaper/internal/memlimit"
	"github.com/lock-reaper/lock-reaper/reaper"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
)

// pass runs `lock-reaper MODE --output json` as a CronJob would, under the
// chart's REAPER_MEMORY_LIMIT=128Mi (or the row's own, o.passLimit) and the default batch sizes (or the
// flags'), with max_releases and max_task_updates lifted so that one pass
// does all the work; checks its report against the fleet; and measures its
// peak RSS from outside and what it cost the server from the server's own
// accounts. An audit changes nothing, so it can be run again; once
// releases everything.
func (f *scaleFleet) pass(ctx context.Context, bin, mode string, o options) (scaleRun, error) {
	dir, err := os.MkdirTemp("", "lr-bench-scale-")
	if err != nil {
		return scaleRun{}, err
	}
	defer os.RemoveAll(dir)
	stdout, err := os.Create(filepath.Join(dir, "stdout"))
	if err != nil {
		return scaleRun{}, err
	}
	defer stdout.Close()
	stderr, err := os.Create(filepath.Join(dir, "stderr"))
	if err != nil {
		return scaleRun{}, err
	}
	defer stderr.Close()
	cmd := exec.CommandContext(ctx, bin, mode, "--output", "json")
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.Env = []string{
		"REAPER_REDIS_URL=" + f.srv.url,
		"REAPER_DATABASE_URL=" + f.dbURL,
		"REAPER_LOG_FORMAT=json",
		"REAPER_HEARTBEAT_RECHECK=" + benchRecheck.String(),
		"REAPER_MAX_RELEASES=" + maxInt32Text, "REAPER_MAX_TASK_UPDATES=" + maxInt32Text,
		fmt.Sprintf("REAPER_REDIS_SCAN_COUNT=%d", o.scanCount), fmt.Sprintf("REAPER_REDIS_BATCH_SIZE=%d", o.batchSize),
		memlimit.Env + "=" + fmt.Sprint(o.passLimit),
	}
	if o.passDBTimeout > 0 {
		cmd.Env = append(cmd.Env, "REAPER_DATABASE_TIMEOUT="+o.passDBTimeout.String())
	}
	done, err := f.srv.measureServer(ctx)
	if err != nil {
		return scaleRun{}, err
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return scaleRun{}, fmt.Errorf("start %s: %w", bin, err)
	}
	hwm := watchHighWaterMark(cmd.Process.Pid)
	err = cmd.Wait()
	wall := time.Since(start)
	peak := hwm()
	var exitErr *exec.ExitError
	if err != nil && !errors.As(err, &exitErr) {
		return scaleRun{}, fmt.Errorf("run %s: %w", bin, err)
	}
	load, err := done()
	if err != nil {
		return scaleRun{}, err
	}
	want := exitcode.OK
	if mode == "audit" {
		want = exitcode.Findings
	}
	if code := cmd.ProcessState.ExitCode(); code != want {
		return scaleRun{}, fmt.Errorf("%s: exit code %d, want %d; stderr ends: %s", mode, code, want, tail(stderr.Name()))
	}
	raw, err := os.ReadFile(stdout.Name())
	if err != nil {
		return scaleRun{}, err
	}
	var rep struct {
		DurationMS int64          `json:"duration_ms"`
		Scanned    reaper.Scanned `json:"scanned"`
		RedisLoad  reportLoad     `json:"redis_load"`
		Summary    reaper.Summary `json:"summary"`
		Guards     []reaper.Guard `json:"guards"`
	}
	if err := json.Unmarshal(raw, &rep); err != nil {
		return scaleRun{}, fmt.Errorf("%s: JSON report: %w", mode, err)
	}
	if err := f.check(mode, rep.Summary, rep.Guards, o.deferOK); err != nil {
		return scaleRun{}, err
	}
	p := ScalePass{WallMS: float64(rep.DurationMS), ProcessMS: ms(wall), PeakRSSBytes: peak.hwm, PeakAnonBytes: peak.anon,
		Holdings: rep.Scanned.TaskLocks + rep.Scanned.ResourceHoldings, Released: rep.Summary.Released, Deferred: rep.Summary.Deferred, TasksUpdated: rep.Summary.TasksUpdated,
		RedisLoad: rep.RedisLoad, Server: load}
	return scaleRun{pass: p}, nil
}

// check compares a pass's summary with the fleet: a figure of a wrong answer
// would measure nothing.
func (f *scaleFleet) check(mode string, s reaper.Summary, guards []reaper.Guard, deferOK bool) error {
	if len(guards) > 0 {
		return fmt.Errorf("%s: guard %s held work back: %s", mode, guards[0].Name, guards[0].Reason)
	}
	m := f.manifest
	got, tasks := s.Released, s.TasksUpdated
	if mode == "audit" {
		got, tasks = s.FindingsByResult[reaper.ResultWouldRelease], s.TasksByResult[reaper.ResultWouldUpdate]
	} else if deferOK {
		got += s.Deferred
	}
	if got != m.StaleHoldings || tasks != m.LostTasks || s.TasksByVerdict[judge.VerdictLost] != m.LostTasks {
		return fmt.Errorf("%s: %d holdings and %d tasks, the fleet has %d stale holdings and %d lost tasks", mode, got, tasks, m.StaleHoldings, m.LostTasks)
	}
	return nil
}
