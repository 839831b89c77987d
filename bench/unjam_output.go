package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
)

func writeUnjamMarkdown(w io.Writer, r *UnjamResults) error {
	var b strings.Builder
	mc, m := r.Machine, r.Method
	fmt.Fprintf(&b, "Machine: %d CPUs (%s), %s, Redis %s, PostgreSQL %s\n\n", mc.CPUs, mc.CPUModel, mc.Go, mc.Redis, mc.PostgreSQL)
	fmt.Fprintf(&b, "Time scaled down %d×, figures scaled back: the daemon's schedule %s, jitter %.0f s; worker ttl %.0f s "+
		"(heartbeat every %.0f s), heartbeat_grace %.0f s, kubernetes.hung_worker_grace %.0f s, clock-skew margin %.0f s, "+
		"container times at %.0f s resolution, a killed container restarted %.0f s later; %d workers and one API process, "+
		"each in a pod, idle workers fetching every %.0f ms (real, not scaled).\n\n",
		m.TimeScale, m.Schedule, m.JitterS, m.WorkerTTLS, m.WorkerTTLS/3, m.HeartbeatGraceS, m.HungWorkerGrace, m.ClockSkewS,
		m.PodResolutionS, m.RestartDelayS, m.Workers, m.PollMS)
	if m.WatchTimeScale != m.TimeScale {
		fmt.Fprintf(&b, "The watched cases of a deleted pod and a restarted container run at %d× instead (the API's timestamps have whole seconds, "+
			"which a faster run would blur); a watched pod's kubelet reports are written to the stand-in API server every %.0f ms (real).\n\n",
			m.WatchTimeScale, float64(watchMirrorPeriod.Milliseconds()))
	}
	b.WriteString("| death | Kubernetes evidence | trials | locks released after (min / median / max) | blocked task started after (min / median / max) | by the rules | released by | pass after the kubelet's report | released after the report |\n")
	b.WriteString("|---|---|---:|---|---|---|---|---|---|\n")
	for _, c := range r.Cases {
		k, woken, after := "no", "–", "–"
		switch {
		case c.Watch:
			k = "yes, watched"
			if c.Woken != (Spread{}) || c.ReleasedAfterReport != (Spread{}) {
				woken, after = spreadText(c.Woken), spreadText(c.ReleasedAfterReport)
			} else {
				woken, after = "no report", "no report"
			}
		case c.Kubernetes:
			k = "yes, listed each pass"
		}
		var by []string
		for _, rule := range slices.Sorted(maps.Keys(c.Rules)) {
			by = append(by, fmt.Sprintf("%s ×%d", rule, c.Rules[rule]))
		}
		fmt.Fprintf(&b, "| %s | %s | %d | %s | %s | %s | %s | %s | %s |\n", c.Death, k, len(c.Trials), spreadText(c.Released), spreadText(c.Started),
			c.Expected, strings.Join(by, ", "), woken, after)
	}
	b.WriteString("\nFrom the death (for the live worker: from its last heartbeat) to the moment the dead owner's task lock was seen gone (polled every 5 ms real), and to the blocked task's started_at. Released by: the Kubernetes rule that made the release due in that pass, or heartbeats when the dead row was past ttl + grace by then, so that the ordinary rules alone would have released it in the same pass (the late window from ttl to ttl + grace is 30 s wide, the schedule 60 s: about half the deaths see no pass inside it).\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func spreadText(s Spread) string { return fmt.Sprintf("%.1f / %.1f / %.1f s", s.Min, s.Median, s.Max) }
