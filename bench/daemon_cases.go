package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/lock-reaper/lock-reaper/internal/exitcode"
	"github.com/lock-reaper/lock-reaper/internal/memlimit"
)

// cpuHalf is the share of one CPU the contended runs get, the chart's
// 500m limit.
const cpuHalf = 0.5

// daemonCases are `run` (the status page on, a pass every 2 s: the first
// releases everything, the view of it built beside the next pass) and
// `status` (a read-only inspection every second, each finding every
// holding stale), under the chart's setting, with a whole CPU and with
// half of one, each for -daemon-span before SIGTERM stops it; none when
// the span is 0. With -pages every page is fetched through the run, during
// the passes and between them; with -foreign-history someone else wrote
// that many entries of 2 MB into the history of passes first, and `run`
// is measured a second time with max_releases and max_task_updates as
// shipped: each pass then releases a part, and every view of the span
// shows the dead owner's remaining holdings and lost tasks.
func daemonCases(o options) []processCase {
	span := o.daemonSpan
	if span <= 0 {
		return nil
	}
	runArgs := []string{"run", "--listen", "127.0.0.1:0", "--schedule", "@every 2s", "--jitter", "0s"}
	base := []processCase{
		{name: "run, status page on", args: runArgs, exit: exitcode.OK, real: true, runFor: span},
		{name: "status", args: []string{"status", "--listen", "127.0.0.1:0", "--every", "1s"},
			exit: exitcode.OK, runFor: span, banner: "lock-reaper status: serving the status page on "},
	}
	if o.pages {
		base = append(base, processCase{name: "run, status page on, limits as shipped", args: runArgs, exit: exitcode.OK, real: true,
			runFor: span, shippedLimits: true})
	}
	var cases []processCase
	for _, share := range []float64{0, cpuHalf} {
		for _, c := range base {
			c.limit, c.containerLimit = limitContainer, fmt.Sprint(rssLimit)
			c.name += ", " + memlimit.Env + " 128Mi"
			if o.pages {
				c.pages = true
				c.name += ", pages fetched"
			}
			if o.foreignHistory > 0 {
				c.foreignHistory = o.foreignHistory
				c.name += fmt.Sprintf(", a foreign history of %d × 2 MB", o.foreignHistory)
			}
			if share > 0 {
				c.cpuShare = share
				c.name += ", 500m CPU"
			}
			cases = append(cases, c)
		}
	}
	return cases
}

// stopAfter sends SIGTERM to a long-running command once its span is over
// (or its context ends); the command then finishes the pass under way.
func stopAfter(ctx context.Context, cmd *exec.Cmd, span time.Duration) (stop func()) {
	done := make(chan struct{})
	go func() {
		select {
		case <-time.After(span):
		case <-ctx.Done():
		case <-done:
			return
		}
		_ = cmd.Process.Signal(syscall.SIGTERM)
	}()
	return func() { close(done) }
}

// throttle holds a process to share of the CPU the way the kernel's CFS
// quota does, in periods of 100 ms: it runs for share of each period and is
// stopped (SIGSTOP) for the rest. With GOMAXPROCS 1 in the child, that is
// share of one CPU.
// Signals go through os.Process, which knows once the child is reaped and
// never signals a process that took its number.
func throttle(p *os.Process, share float64) (stop func()) {
	const period = 100 * time.Millisecond
	on := time.Duration(float64(period) * share)
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		defer func() { _ = p.Signal(syscall.SIGCONT) }()
		for {
			select {
			case <-done:
				return
			case <-time.After(on):
			}
			if p.Signal(syscall.SIGSTOP) != nil {
				return
			}
			select {
			case <-done:
				return
			case <-time.After(period - on):
			}
			if p.Signal(syscall.SIGCONT) != nil {
				return
			}
		}
	}()
	return func() { close(done); <-finished }
}
