package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/lock-reaper/lock-reaper/heartbeat"
	"github.com/lock-reaper/lock-reaper/heartbeat/kube"
	"github.com/lock-reaper/lock-reaper/internal/config"
	"github.com/lock-reaper/lock-reaper/internal/kubeevents"
	"github.com/lock-reaper/lock-reaper/reaper"
)

// openPods decides whether passes read Kubernetes pods (kubernetes.enabled)
// and returns the source they list, nil when off, whether it may be watched
// (auto's trial watch was not refused), and the recorder of the passes'
// Events (nil when off). An error is a configuration to fix; auto never
// fails.
func openPods(ctx context.Context, c config.Config, logger *slog.Logger, lookupEnv func(string) (string, bool)) (reaper.PodSource, bool, *kubeevents.Recorder, error) {
	d, err := kube.Open(ctx, kube.Config{
		Enabled: c.Kubernetes.Enabled, Namespace: c.Kubernetes.Namespace, Selector: c.Kubernetes.Selector,
		Container: c.Kubernetes.Container, APIContainer: c.Kubernetes.APIContainer, Timeout: c.Pass.KubernetesTimeout, Kubeconfig: c.Kubernetes.Kubeconfig,
		KubeconfigEnv: c.Kubernetes.KubeconfigEnv,
	})
	if err != nil {
		return nil, false, nil, err
	}
	if d.Source == nil {
		level := slog.LevelDebug
		if d.Warn {
			level = slog.LevelWarn
		}
		logger.Log(ctx, level, "kubernetes evidence off", slog.String("reason", d.Reason))
		return nil, false, nil, nil
	}
	level := slog.LevelInfo
	if d.Warn {
		level = slog.LevelWarn
	}
	logger.Log(ctx, level, "kubernetes evidence on", slog.String("where", d.Source.Where()), slog.String("reason", d.Reason))
	return d.Source, !d.WatchForbidden, eventRecorder(d, c, logger, lookupEnv), nil
}

// eventRecorder is the recorder of the passes' Events about pods, through
// the client that lists them. The reaper's own pod, which the Events no
// worker pod fits are about, is the one the downward API names (the
// chart's POD_NAME, POD_NAMESPACE and POD_UID); without POD_NAME those
// Events are not written. nil when the client cannot be made, which the
// pod lists would have failed on first.
func eventRecorder(d kube.Decision, c config.Config, logger *slog.Logger, lookupEnv func(string) (string, bool)) *kubeevents.Recorder {
	env := func(k string) string {
		v, _ := lookupEnv(k)
		return strings.TrimSpace(v)
	}
	self := kube.PodRef{Name: env("POD_NAME"), Namespace: env("POD_NAMESPACE"), UID: env("POD_UID")}
	if self.Name != "" && self.Namespace == "" {
		self.Namespace = d.Source.Namespace()
	}
	instance := self.Name
	if instance == "" {
		instance, _ = os.Hostname()
	}
	sink, err := d.EventSink(instance)
	if err != nil || sink == nil {
		return nil
	}
	return &kubeevents.Recorder{Sink: sink, Namespace: d.Source.Namespace(), Self: self, Timeout: c.Pass.KubernetesTimeout, Logger: logger}
}

// podText is an owner's pod evidence for text output, "" without one:
// " [pod NAME PHASE, started T, N restarts: RULE]".
func podText(e *reaper.PodEvidence) string {
	if e == nil {
		return ""
	}
	parts := []string{"pod " + e.Name}
	if e.Phase != "" {
		parts[0] += " " + e.Phase
	}
	if e.Terminating {
		parts = append(parts, "terminating")
	}
	if c := e.Container; c != nil {
		if c.StartedAt != nil {
			parts = append(parts, "started "+c.StartedAt.UTC().Format(time.RFC3339))
		}
		parts = append(parts, fmt.Sprintf("%d restarts", c.Restarts))
	}
	return " [" + strings.Join(parts, ", ") + ": " + string(e.Rule) + "]"
}

// writeKubernetes says what the pass read from Kubernetes, when that is on.
func writeKubernetes(w io.Writer, k *reaper.KubernetesReport) {
	if k == nil {
		return
	}
	if k.Read != reaper.KubernetesRead {
		fmt.Fprintf(w, "\nKubernetes: unavailable (%s): judged by heartbeats alone: %s\n", k.Where, k.Error)
		return
	}
	fmt.Fprintf(w, "\nKubernetes: %d pods read (%s)", k.Pods, k.Where)
	if n := k.OwnersByEvidence[heartbeat.PodAliveNotHeartbeating]; n > 0 {
		fmt.Fprintf(w, "; %d workers alive by Kubernetes but not heartbeating", n)
	}
	fmt.Fprintln(w)
}
