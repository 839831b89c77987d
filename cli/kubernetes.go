package cli

import (
	"context"
	"log/slog"

	"github.com/lock-reaper/lock-reaper/config"
	"github.com/lock-reaper/lock-reaper/kube"
	"github.com/lock-reaper/lock-reaper/reaper"
)

// openPods decides whether passes read Kubernetes pods (kubernetes.enabled)
// and returns the source they list, nil when off. An error is a
// configuration to fix; auto never fails.
func openPods(ctx context.Context, c config.Config, logger *slog.Logger) (reaper.PodSource, error) {
	d, err := kube.Open(ctx, kube.Config{
		Enabled: c.Kubernetes.Enabled, Namespace: c.Kubernetes.Namespace, Selector: c.Kubernetes.Selector,
		Container: c.Kubernetes.Container, Timeout: c.Kubernetes.Timeout, Kubeconfig: c.Kubernetes.Kubeconfig,
	})
	if err != nil {
		return nil, err
	}
	if d.Source == nil {
		logger.Debug("kubernetes evidence off", slog.String("reason", d.Reason))
		return nil, nil
	}
	logger.Info("kubernetes evidence on", slog.String("where", d.Source.Where()), slog.String("reason", d.Reason))
	return d.Source, nil
}
