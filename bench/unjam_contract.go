package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/lock-reaper/lock-reaper/internal/ctxwait"
	"github.com/lock-reaper/lock-reaper/internal/daemon"
)

// What goes wrong with a watch case's watch, unjamCase.Fault.
const (
	// watchStalled: the watch's connection stays open and silent (no
	// event, no bookmark) from a random moment before the death, so that
	// the watch has not been relisted yet when the worker dies.
	watchStalled = "stalled"
	// watchForbidden: the API server answers 403 to a watch and lists
	// pods: kubernetes.enabled auto's trial watch is refused and the
	// passes list the pods, as `run` does then.
	watchForbidden = "forbidden"
)

// The moments the rules allow a release from, UnjamTrial.Contract.
const (
	contractHeartbeat = "last heartbeat + ttl + grace"
	contractEnd       = "the container's end"
	contractGone      = "the deletion, once the row is past its ttl (pod-gone)"
	contractHung      = "last heartbeat + ttl + grace + hung_worker_grace"
)

// contractMoment is the moment the rules (docs/verdicts.md) allow the dead
// owner's locks to be released, given the evidence the case's Kubernetes
// can give, and its name: the container's end the kubelet reports
// (container-ended, container-restarted), the absence of a deleted pod from
// a list once the row is past its ttl (pod-gone), or the heartbeat rule,
// whichever comes first. A stalled watch misses the kubelet's report that
// the API server has: its moment is still the container's end. died is
// the death, lastBeat the dead row's last heartbeat; all real time.
func (o options) contractMoment(c unjamCase, died, lastBeat time.Time) (time.Time, string) {
	deadline := lastBeat.Add(o.scaled(unjamWorkerTTL + unjamGrace))
	at, name := deadline, contractHeartbeat
	switch {
	case !c.Kubernetes, c.Death == deathNodeCrash:
	case c.Death == deathAlive:
		return deadline.Add(o.scaled(o.hungWorkerGrace)), contractHung
	case c.Death == deathRestarted, c.Watch && c.Fault != watchForbidden:
		at, name = died, contractEnd
	default:
		// Listed pods: the list after the final delete shows no pod.
		at, name = died, contractGone
		if late := lastBeat.Add(o.scaled(unjamWorkerTTL)); late.After(died) {
			at = late
		}
	}
	if deadline.Before(at) {
		return deadline, contractHeartbeat
	}
	return at, name
}

// expected is the range the rules and the daemon give for a case, from
// the death (the last heartbeat for a live worker): the owner's last
// heartbeat was 0 to ttl/3 before its death; a row past ttl + grace starts
// a pass within heartbeat_poll; while the pods are only listed, so does a
// row past its ttl, a second after it (a pod deleted at the death is then
// gone from that pass's list); other pod evidence a list shows waits for
// the next pass, on the schedule (+ jitter) or at ttl + grace, whichever
// first; the kubelet's report a watch sees starts one after the wake's
// debounce.
func (o options) expected(c unjamCase) string {
	period := unjamWorkerTTL / 3
	poll := daemon.HeartbeatPollDefault
	ttlGrace := unjamWorkerTTL + unjamGrace
	next := min(unjamSchedule+unjamJitter, ttlGrace+poll)
	lo, hi := ttlGrace-period, ttlGrace+poll
	switch {
	case c.Death == deathNodeCrash:
		// The pod's last status shows the container running since before
		// the row: the hold rule keeps the worker for hung_worker_grace
		// unless the pod's Ready False ends the hold.
		hi = ttlGrace + o.hungWorkerGrace + poll
	case c.Death == deathAlive && c.Kubernetes:
		lo, hi = ttlGrace+o.hungWorkerGrace, ttlGrace+o.hungWorkerGrace+poll
	case c.Death == deathAlive:
		lo = ttlGrace
	case !c.Kubernetes:
	case c.Watch && c.Fault == "":
		return fmt.Sprintf("%.0f s (the wake's debounce)", daemon.WakeDebounceDefault.Seconds())
	case c.Death == deathRestarted:
		lo, hi = 0, next
	case c.Fault != watchStalled:
		// pod-gone, the pods listed: the pass the row's going past its
		// ttl starts, read a second after it and within a poll.
		lo, hi = unjamWorkerTTL-period, unjamWorkerTTL+time.Second+poll
	default:
		// pod-gone through a stalled watch, whose cache is read until its
		// silence is noticed: once the row is past its ttl, at the next
		// pass.
		lo, hi = unjamWorkerTTL-period, next
	}
	out := fmt.Sprintf("%.0f–%.0f s", lo.Seconds(), hi.Seconds())
	if c.Death == deathRestarted && c.Kubernetes {
		// A container that started within the clock-skew margin (at the
		// API's resolution) of the old row's last heartbeat proves nothing.
		out += fmt.Sprintf(" (%.0f–%.0f s when it restarted within the margin of the last heartbeat)",
			(ttlGrace - period).Seconds(), (ttlGrace + poll).Seconds())
	}
	return out
}

// awaitDeath waits for the moment of the death, a random one of a
// schedule period after the first, so that deaths fall anywhere in the
// schedule and the heartbeat period. A stalled case's watch falls silent
// at a random moment of the watch's silence limit before it, so that the
// death comes before the silence is noticed and the pods listed again.
func (o options) awaitDeath(ctx context.Context, c unjamCase, w *watchedPods) bool {
	schedule := o.scaled(unjamSchedule)
	wait := schedule/2 + rand.N(schedule)
	if c.Fault == watchStalled {
		before := rand.N(min(wait, w.maxSilence))
		if !ctxwait.Sleep(ctx, wait-before) {
			return false
		}
		w.api.Mute(true)
		wait = before
	}
	return ctxwait.Sleep(ctx, wait)
}
