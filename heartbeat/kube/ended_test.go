package kube

import (
	"testing"
	"time"

	"github.com/lock-reaper/lock-reaper/heartbeat"
	"github.com/stretchr/testify/require"
)

var endedNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func endedAt(ago time.Duration) *time.Time { t := endedNow.Add(-ago); return &t }

// endedRunning is a running worker pod whose container started started ago,
// after restarts restarts (the last one ended a second before it started).
func endedRunning(started time.Duration, restarts int32) heartbeat.Pod {
	c := &heartbeat.Container{Name: "worker", Running: true, StartedAt: endedAt(started), Restarts: restarts}
	if restarts > 0 {
		c.LastTerminated = &heartbeat.Termination{Reason: "Error", ExitCode: 1, FinishedAt: endedAt(started + time.Second)}
		c.FinishedAt = c.LastTerminated.FinishedAt
	}
	return heartbeat.Pod{Name: "w", UID: "uid-w", Phase: "Running", Ready: true, ContainersReady: true, StartTime: endedAt(2 * time.Hour), Container: c}
}

func endedWith(p heartbeat.Pod, f func(*heartbeat.Pod)) heartbeat.Pod {
	f(&p)
	return p
}

// endedTerminated is p whose worker container ended ago ago, not restarted.
func endedTerminated(p heartbeat.Pod, ago time.Duration, reason string, code int32) heartbeat.Pod {
	return endedWith(p, func(p *heartbeat.Pod) {
		c := *p.Container
		c.Running, c.StartedAt = false, nil
		c.Terminated = &heartbeat.Termination{Reason: reason, ExitCode: code, FinishedAt: endedAt(ago)}
		c.FinishedAt = c.Terminated.FinishedAt
		p.Container, p.Ready, p.ContainersReady = &c, false, false
	})
}

func TestIncarnationEndedSince(t *testing.T) {
	t.Parallel()
	running := endedRunning(time.Hour, 0)
	restarted := endedWith(endedRunning(2*time.Second, 1), func(p *heartbeat.Pod) { p.Container.LastTerminated.Reason = "OOMKilled" })
	restartedAgain := endedRunning(time.Second, 2)
	cases := []struct {
		name   string
		before *heartbeat.Pod
		now    heartbeat.Pod
		want   bool
	}{
		{"first sight, running, never restarted", nil, running, false},
		{"first sight, restarted once", nil, restarted, true},
		{"running, unchanged", &running, running, false},
		{"restart count grown", &running, restarted, true},
		{"restart count grown again", &restarted, restartedAgain, true},
		{"restarted, unchanged", &restarted, restarted, false},
		{"terminated now", &running, endedTerminated(running, time.Second, "OOMKilled", 137), true},
		{"terminated, then restarted: the end already reported", new(endedTerminated(running, 3*time.Second, "Error", 1)),
			endedWith(endedRunning(time.Second, 1), func(p *heartbeat.Pod) { p.Container.LastTerminated.FinishedAt = endedAt(3 * time.Second) }), false},
		{"Ready False only (node lost): no report", &running, endedWith(running, func(p *heartbeat.Pod) { p.Ready = false }), false},
		{"deletion timestamp only: no report", &running, endedWith(running, func(p *heartbeat.Pod) { p.Terminating = true }), false},
		{"another pod of the name", &restarted, endedWith(restarted, func(p *heartbeat.Pod) { p.UID = "other" }), true},
		{"API container terminated", &running, endedWith(running, func(p *heartbeat.Pod) {
			p.API = endedTerminated(running, time.Second, "Error", 1).Container
		}), true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, IncarnationEndedSince(tc.before, tc.now))
		})
	}
}
