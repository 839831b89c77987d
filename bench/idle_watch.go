package main

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/lock-reaper/lock-reaper/internal/sim"
	"github.com/lock-reaper/lock-reaper/internal/sim/simkube"
	"github.com/lock-reaper/lock-reaper/internal/testing/kubeapi"
)

// idleKube is the idle scenario's Kubernetes: the unjam scenario's stand-in
// API server holding a running pod per worker row, which `run` watches
// through a kubeconfig as it would from a laptop. Its cost is the watch's:
// the first list, a bookmark a minute, and the pods' evidence in each pass.
type idleKube struct {
	api     *kubeapi.Server
	dir     string
	cleanup []func()
}

func (k *idleKube) Cleanup(f func()) { k.cleanup = append(k.cleanup, f) }

func (k *idleKube) close() {
	for i := len(k.cleanup) - 1; i >= 0; i-- {
		k.cleanup[i]()
	}
	if k.dir != "" {
		_ = os.RemoveAll(k.dir)
	}
}

// startIdleKube starts the server with the pods of spec's worker rows
// ("<n>@<Hostname>-<i>", internal/sim's BuildFleet) and writes the
// kubeconfig that names it.
func startIdleKube(spec sim.FleetSpec) (*idleKube, error) {
	k := &idleKube{}
	k.api = kubeapi.New(k)
	started := time.Now().Add(-time.Hour)
	for i := range spec.Owners {
		p := kubeapi.NewPod(kubeapi.PodSpec{Namespace: simkube.Namespace, Name: fmt.Sprintf("%s-%d", spec.Hostname, i), Component: "worker",
			Node: "node-1", Started: started})
		if err := k.api.Create(p); err != nil {
			k.close()
			return nil, fmt.Errorf("idle: create pod: %w", err)
		}
	}
	var err error
	if k.dir, err = os.MkdirTemp("", "lr-bench-idle-kube-"); err != nil {
		k.close()
		return nil, err
	}
	body := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: bench, cluster: {server: %q}}]
users: [{name: bench, user: {token: bench}}]
contexts: [{name: bench, context: {cluster: bench, user: bench, namespace: %s}}]
current-context: bench
`, k.api.URL(), simkube.Namespace)
	if err := os.WriteFile(k.kubeconfig(), []byte(body), 0o600); err != nil {
		k.close()
		return nil, err
	}
	return k, nil
}

func (k *idleKube) kubeconfig() string { return filepath.Join(k.dir, "kubeconfig") }

// env is what `run` needs to watch the server's pods.
func (k *idleKube) env() []string {
	return []string{"KUBECONFIG=" + k.kubeconfig(), "REAPER_KUBERNETES_ENABLED=true", "REAPER_KUBERNETES_NAMESPACE=" + simkube.Namespace}
}
