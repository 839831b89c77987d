package kube

import (
	"context"
	"github.com/lock-reaper/lock-reaper/internal/testing/testenv"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/lock-reaper/lock-reaper/internal/testing/kubeapi"
)

// openServer is a pods API with one worker pod, and a kubeconfig naming it.
func openServer(t *testing.T) (*apiServer, string) {
	t.Helper()
	api := &apiServer{pods: []corev1.Pod{stPod("example-worker-1", "worker", stStart, 0)}}
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	return api, writeKubeconfig(t, srv.URL)
}

// TestOpenKubeconfigList: KUBECONFIG is a list, as kubectl reads it: a
// missing first file is skipped, the files that exist are merged, and the
// first to set a key wins.
func TestOpenKubeconfigList(t *testing.T) {
	t.Parallel()
	_, good := openServer(t)
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing")
	// A second file whose context names another namespace: the first file's
	// current-context and namespace win.
	other := filepath.Join(dir, "other")
	require.NoError(t, os.WriteFile(other, []byte(`apiVersion: v1
kind: Config
clusters: [{name: test, cluster: {server: "https://192.0.2.1:6443"}}]
contexts: [{name: test, context: {cluster: test, namespace: elsewhere}}]
current-context: test
`), 0o600))
	for _, env := range []string{missing + ":" + good, missing + ":" + good + ":" + other, good + "::" + missing} {
		d, err := Open(context.Background(), Config{Enabled: EnabledTrue, KubeconfigEnv: env})
		require.NoError(t, err, env)
		require.Equal(t, "namespace pulp, selector "+DefaultSelector, d.Source.Where(), env)
		pods, err := d.Source.ListPods(context.Background())
		require.NoError(t, err, env)
		require.Len(t, pods, 1, env)
	}

	// --kubeconfig is one file, whatever it contains.
	_, err := Open(context.Background(), Config{Enabled: EnabledTrue, Kubeconfig: missing + ":" + good})
	require.ErrorContains(t, err, "kubeconfig "+missing+":"+good)
}

// TestOpenStaleKubeconfig: a kubeconfig that cannot be used turns auto off
// with a warning, never an error; under true the error names the file and
// the fix.
func TestOpenStaleKubeconfig(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	broken := filepath.Join(dir, "broken")
	require.NoError(t, os.WriteFile(broken, []byte("clusters: [not: a: list"), 0o600))
	noContext := filepath.Join(dir, "no-context")
	require.NoError(t, os.WriteFile(noContext, []byte("apiVersion: v1\nkind: Config\n"), 0o600))
	gone := filepath.Join(dir, "gone")

	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"list of missing files", Config{KubeconfigEnv: gone + ":" + filepath.Join(dir, "also-gone")}, "none of its files exists; point KUBECONFIG at"},
		{"stale --kubeconfig", Config{Kubeconfig: gone}, "kubeconfig " + gone},
		{"unparsable", Config{KubeconfigEnv: broken}, "KUBECONFIG " + broken},
		{"no current context", Config{KubeconfigEnv: noContext}, "run kubectl config use-context"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			auto, tru := tc.cfg, tc.cfg
			auto.Enabled, tru.Enabled = EnabledAuto, EnabledTrue
			d, err := Open(context.Background(), auto)
			require.NoError(t, err, "auto never stops a command")
			require.Nil(t, d.Source)
			require.True(t, d.Warn)
			require.Contains(t, d.Reason, tc.want)
			require.Contains(t, d.Reason, "judging by heartbeats alone")

			_, err = Open(context.Background(), tru)
			require.ErrorContains(t, err, tc.want)
			require.True(t, strings.Contains(err.Error(), "kubernetes.enabled: false") || strings.Contains(err.Error(), "use-context"), err.Error())
		})
	}
}

// TestOpenAPIHangs: an API that accepts the connection and never answers
// holds Open (auto's trial list) and each list for the timeout, no longer.
func TestOpenAPIHangs(t *testing.T) {
	t.Parallel()
	api, kubeconfig := openServer(t)
	api.hang.Store(true)
	start := time.Now()
	d, err := Open(context.Background(), Config{Enabled: EnabledAuto, KubeconfigEnv: kubeconfig, Timeout: 300 * time.Millisecond})
	require.NoError(t, err)
	require.Less(t, time.Since(start), 3*time.Second)
	require.NotNil(t, d.Source, "a slow API may answer later; each pass says when it does not")
	require.Contains(t, d.Reason, "the trial list failed")

	d, err = Open(context.Background(), Config{Enabled: EnabledTrue, KubeconfigEnv: kubeconfig})
	require.NoError(t, err, "true does not list at open")
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start = time.Now()
	_, err = d.Source.ListPods(ctx)
	require.Error(t, err)
	require.Less(t, time.Since(start), 3*time.Second)
}

func TestOpenInClusterErrorSaysTheFix(t *testing.T) {
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	_, err := Open(context.Background(), Config{Enabled: EnabledTrue})
	require.ErrorContains(t, err, "--kubeconfig or KUBECONFIG")
}

// TestOpenAutoTriesTheWatch: auto tries the watch as well as the list; a
// refused watch keeps the lists on, says so once, in a warning, and the
// reason names the kubeconfig used.
func TestOpenAutoTriesTheWatch(t *testing.T) {
	t.Parallel()
	api := kubeapi.New(t)
	require.NoError(t, api.Create(kubeapi.NewPod(kubeapi.PodSpec{Namespace: "pulp", Name: "example-worker-1", Component: "worker", Node: "node-a", Started: wt0})))
	kc := writeKubeconfig(t, api.URL())
	d, err := Open(context.Background(), Config{Enabled: EnabledAuto, Kubeconfig: kc, Timeout: 5 * time.Second})
	require.NoError(t, err)
	require.NotNil(t, d.Source)
	require.False(t, d.WatchForbidden)
	require.Equal(t, "with kubeconfig "+kc+", may list pods", d.Reason)
	require.Positive(t, api.Watches(), "the trial watch")

	api.FailWatches(403)
	d, err = Open(context.Background(), Config{Enabled: EnabledAuto, Kubeconfig: kc, Timeout: 5 * time.Second})
	require.NoError(t, err)
	require.NotNil(t, d.Source, "the lists stay on")
	require.True(t, d.WatchForbidden)
	require.True(t, d.Warn)
	require.Contains(t, d.Reason, "with kubeconfig "+kc+", may list pods but not watch them")
	require.Contains(t, d.Reason, "cannot watch resource")
}

// TestWatcherForbiddenSaysItOnce: a watch refused on every retry is one
// warning, and passes list meanwhile.
func TestWatcherForbiddenSaysItOnce(t *testing.T) {
	t.Parallel()
	api := kubeapi.New(t)
	require.NoError(t, api.Create(kubeapi.NewPod(kubeapi.PodSpec{Namespace: "pulp", Name: "example-worker-1", Component: "worker", Node: "node-a", Started: wt0})))
	api.FailWatches(403)
	src, err := NewRESTSource(api.Config(), "pulp", DefaultSelector, DefaultContainer)
	require.NoError(t, err)
	var logs testenv.SyncBuffer
	w, err := NewWatcher(src, WatchConfig{Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { w.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	time.Sleep(4 * time.Second) // several retries
	require.Equal(t, 1, strings.Count(logs.String(), "watch failed"), logs.String())
	require.False(t, w.FromCache())
	pods, err := w.ListPods(context.Background())
	require.NoError(t, err)
	require.Len(t, pods, 1)
}
