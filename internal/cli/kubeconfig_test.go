package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/internal/exitcode"
	"github.com/lock-reaper/lock-reaper/internal/testing/kubeapi"
	"github.com/lock-reaper/lock-reaper/reaper"
)

// TestKubernetesNeverBlocksRelease: under kubernetes.enabled auto, a
// KUBECONFIG list whose files are missing or stale turns the pod evidence
// off with one warning, and release, locks and audit work; an API that
// never answers costs them the kubernetes.timeout, no more.
func TestKubernetesNeverBlocksRelease(t *testing.T) {
	t.Parallel()
	f := newOpsReleaseFleet(t)
	dir := t.TempDir()
	stale := filepath.Join(dir, "stale")
	require.NoError(t, os.WriteFile(stale, []byte("clusters: [not: a: list"), 0o600))
	env := func(extra map[string]string) map[string]string {
		out := map[string]string{}
		for k, v := range f.env {
			out[k] = v
		}
		for k, v := range extra {
			out[k] = v
		}
		return out
	}

	broken := env(map[string]string{"KUBECONFIG": filepath.Join(dir, "missing") + ":" + stale})
	for _, tc := range []struct {
		args []string
		want int
	}{{[]string{"locks"}, exitcode.OK}, {[]string{"audit"}, exitcode.Guarded}} {
		code, _, stderr := run(t, broken, tc.args...)
		require.Equal(t, tc.want, code, stderr)
		require.Equal(t, 1, strings.Count(stderr, "kubernetes evidence off"), stderr)
		require.Contains(t, stderr, "KUBECONFIG "+filepath.Join(dir, "missing"))
	}
	code, _, stderr := run(t, env(map[string]string{"KUBECONFIG": filepath.Join(dir, "missing"), "REAPER_KUBERNETES_ENABLED": "true"}), "locks")
	require.Equal(t, exitcode.Usage, code, "under true the kubeconfig is the user's to fix")
	require.Contains(t, stderr, "none of its files exists; point KUBECONFIG at")

	api := kubeapi.New(t)
	api.Hang(true)
	kubeconfig := filepath.Join(dir, "hangs")
	require.NoError(t, os.WriteFile(kubeconfig, []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: test, cluster: {server: %q}}]
users: [{name: test, user: {token: not-a-secret}}]
contexts: [{name: test, context: {cluster: test, user: test, namespace: pulp}}]
current-context: test
`, api.URL())), 0o600))
	hangs := env(map[string]string{"KUBECONFIG": filepath.Join(dir, "missing") + ":" + kubeconfig, "REAPER_KUBERNETES_TIMEOUT": "300ms"})
	start := time.Now()
	code, out, stderr := run(t, hangs, "release", "--owner", "1@dead", "--yes", "--output", "json")
	require.Equal(t, exitcode.OK, code, stderr)
	require.Less(t, time.Since(start), 20*time.Second)
	var rep reaper.Report
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	require.Equal(t, 6, rep.Summary.Released, "the break-glass release works whatever the API does")
}

// TestRunWatchesPods runs `lock-reaper run` against the stand-in API server:
// it watches the pods, and the kubelet's report that a worker container
// ended starts a pass long before the next tick, logged as such.
func TestRunWatchesPods(t *testing.T) {
	t.Parallel()
	f := newRunFleet(t)
	api := kubeapi.New(t)
	pod := "example-worker-6d9f-aaaaa"
	require.NoError(t, api.Create(kubeapi.NewPod(kubeapi.PodSpec{Namespace: "pulp", Name: pod, Component: "worker", Node: "node-a", Started: time.Now().Add(-time.Hour)})))
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, os.WriteFile(kubeconfig, []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: test, cluster: {server: %q}}]
users: [{name: test, user: {token: not-a-secret}}]
contexts: [{name: test, context: {cluster: test, user: test, namespace: pulp}}]
current-context: test
`, api.URL())), 0o600))
	env := servicesEnv(f.redis, f.db)
	env["REAPER_KUBERNETES_ENABLED"] = "true"
	env["KUBECONFIG"] = kubeconfig
	env["REAPER_LOG_LEVEL"] = "debug"
	r := startRun(t, env, "--schedule", "@every 1h", "--jitter", "0s", "--listen", "127.0.0.1:0")
	r.waitFor(t, msgIs("pass completed"))

	require.Eventually(t, func() bool { return api.Watches() > 0 }, 10*time.Second, 10*time.Millisecond)
	time.Sleep(time.Second) // the watch settles
	require.NoError(t, api.ContainerTerminated("pulp", pod, "worker", 137, "OOMKilled", time.Now()))
	r.waitFor(t, msgIs("worker container ended: pass now"))
	woken := r.waitFor(t, msgIs("pass completed"))
	require.Equal(t, "kubernetes: a worker container ended", woken["started_by"])
	require.Equal(t, exitcode.OK, r.stop(t))
}
