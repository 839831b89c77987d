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
	fmt.Fprintf(&b, "The daemon is run's: passes on the schedule, one as soon as a heartbeat read (every %.0f s) finds a row past ttl + grace "+
		"or a pending verdict's time come, with the pods only listed one when a row goes past its ttl, "+
		"and, with a watch, one after each kubelet's report of a container's end. "+
		"A watch's silence limit is %.0f s, the API server's bookmark interval %.0f s.\n\n", m.HeartbeatPollS, m.WatchMaxSilenceS, m.BookmarkS)
	b.WriteString("| death | Kubernetes evidence | trials | the rules allow the release at | released after that moment (min / median / max) | after last heartbeat + ttl + grace | after the death | blocked task started after the death | by the rules, from the death | released by | after the kubelet's report |\n")
	b.WriteString("|---|---|---:|---|---|---|---|---|---|---|---|\n")
	for _, c := range r.Cases {
		k, after := "no", "–"
		switch {
		case c.Fault == watchForbidden:
			k = "watch forbidden (403), listed each pass"
		case c.Fault == watchStalled:
			k = "watched, the watch stalled"
		case c.Watch:
			k = "watched"
		case c.Kubernetes:
			k = "listed each pass"
		}
		if c.Watch && c.Fault != watchForbidden {
			after = "no report"
			if c.ReleasedAfterReport != (Spread{}) {
				after = spreadText(c.ReleasedAfterReport)
			}
		}
		var by, moments []string
		for _, rule := range slices.Sorted(maps.Keys(c.Rules)) {
			by = append(by, fmt.Sprintf("%s ×%d", rule, c.Rules[rule]))
		}
		seen := map[string]int{}
		for _, tr := range c.Trials {
			if seen[tr.Contract]++; seen[tr.Contract] == 1 {
				moments = append(moments, tr.Contract)
			}
		}
		for i, m := range moments {
			if seen[m] != len(c.Trials) {
				moments[i] = fmt.Sprintf("%s ×%d", m, seen[m])
			}
		}
		fmt.Fprintf(&b, "| %s | %s | %d | %s | **%s** | %s | %s | %s | %s | %s | %s |\n", c.Death, k, len(c.Trials), strings.Join(moments, ", "),
			spreadText(c.AfterContract), spreadText(c.AfterDeadline), spreadText(c.Released), spreadText(c.Started),
			c.Expected, strings.Join(by, ", "), after)
	}
	b.WriteString("\nThe release is the moment the dead owner's task lock was seen gone (polled every 5 ms real). The rules allow it at the container's end the kubelet reports " +
		"(container-ended, container-restarted), at a deleted pod's absence from a list once the row is past its ttl (pod-gone), or at the last heartbeat + ttl + grace, " +
		"whichever the case's evidence gives first; for the live worker held by Kubernetes, hung_worker_grace later. A stalled watch's moment is still the container's end, " +
		"which the API server has and the watch misses. A negative delay after ttl + grace is pod evidence freeing the locks before the heartbeat rule would. " +
		"Released by: the Kubernetes rule that made the release due in that pass, or heartbeats when the dead row was past ttl + grace by then.\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func spreadText(s Spread) string { return fmt.Sprintf("%.1f / %.1f / %.1f s", s.Min, s.Median, s.Max) }
