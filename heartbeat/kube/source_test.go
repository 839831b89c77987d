package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lock-reaper/lock-reaper/heartbeat"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
)

var stStart = time.Date(2026, 7, 24, 11, 0, 0, 0, time.UTC)

// stPod is a pod as pulp-operator labels it, with its worker container
// running since started and restarted restarts times.
func stPod(name, component string, started time.Time, restarts int32) corev1.Pod {
	container := "worker"
	if component == "api" {
		container = "api"
	}
	return corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "pulp", Labels: map[string]string{
			"app.kubernetes.io/managed-by": "pulp-operator", "app.kubernetes.io/component": component, "pulp_cr": "example",
		}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: container}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{
			Name: container, RestartCount: restarts,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(started)}},
		}}},
	}
}

// apiServer answers the pods list as the Kubernetes API server does: label
// selector, limit and continue, Status objects for errors. fail, when set,
// answers instead with that HTTP status; hang waits for the client to go.
type apiServer struct {
	pods     []corev1.Pod
	fail     atomic.Int32
	hang     atomic.Bool
	requests atomic.Int32
}

func (a *apiServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a.requests.Add(1)
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	if len(parts) != 5 || parts[0] != "api" || parts[1] != "v1" || parts[2] != "namespaces" || parts[4] != "pods" || r.Method != http.MethodGet {
		a.status(w, http.StatusNotFound, "NotFound", "the server could not find the requested resource")
		return
	}
	if a.hang.Load() {
		<-r.Context().Done()
		return
	}
	if code := int(a.fail.Load()); code != 0 {
		reason := map[int]string{403: "Forbidden", 401: "Unauthorized", 500: "InternalError", 410: "Expired"}[code]
		a.status(w, code, metav1.StatusReason(reason), fmt.Sprintf(`pods is %s: User "system:serviceaccount:pulp:lock-reaper" cannot list resource "pods"`, strings.ToLower(reason)))
		return
	}
	sel, err := labels.Parse(r.URL.Query().Get("labelSelector"))
	if err != nil {
		a.status(w, http.StatusBadRequest, metav1.StatusReasonBadRequest, err.Error())
		return
	}
	var match []corev1.Pod
	for _, p := range a.pods {
		if p.Namespace == parts[3] && sel.Matches(labels.Set(p.Labels)) {
			match = append(match, p)
		}
	}
	from, _ := strconv.Atoi(r.URL.Query().Get("continue"))
	limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
	list := corev1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}}
	list.Items = match[min(from, len(match)):]
	if limit > 0 && len(list.Items) > limit {
		list.Items = list.Items[:limit]
		list.Continue = strconv.Itoa(from + limit)
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(list)
}

func (a *apiServer) status(w http.ResponseWriter, code int, reason metav1.StatusReason, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure, Code: int32(code), Reason: reason, Message: msg})
}

func setup(t *testing.T, pods ...corev1.Pod) (*Source, *apiServer) {
	t.Helper()
	api := &apiServer{pods: pods}
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	lister, err := newRESTPods(&rest.Config{Host: srv.URL}, "pulp")
	require.NoError(t, err)
	src, err := NewSource(lister, "pulp", DefaultSelector, DefaultContainer)
	require.NoError(t, err)
	return src, api
}

func TestListPodsSelectsWorkerAndAPIPods(t *testing.T) {
	t.Parallel()
	other := stPod("other-worker", "worker", stStart, 0)
	other.Namespace = "elsewhere"
	src, _ := setup(t,
		stPod("example-worker-6d9f-abcde", "worker", stStart, 2),
		stPod("example-api-6d9f-fghij", "api", stStart, 0),
		stPod("example-content-6d9f-klmno", "content", stStart, 0),
		other,
	)
	pods, err := src.ListPods(context.Background())
	require.NoError(t, err)
	started := stStart
	require.Equal(t, []heartbeat.Pod{
		{Name: "example-worker-6d9f-abcde", Phase: "Running", AnyRunning: true, Container: &heartbeat.Container{Name: "worker", Running: true, StartedAt: &started, Restarts: 2}},
		{Name: "example-api-6d9f-fghij", Phase: "Running", AnyRunning: true, API: &heartbeat.Container{Name: "api", Running: true, StartedAt: &started}},
	}, pods)
	require.Equal(t, "namespace pulp, selector "+DefaultSelector, src.Where())
}

func TestListPodsReadsEveryPage(t *testing.T) {
	t.Parallel()
	var pods []corev1.Pod
	for i := range 2*pageSize + 7 {
		pods = append(pods, stPod(fmt.Sprintf("example-worker-%04d", i), "worker", stStart, 0))
	}
	src, api := setup(t, pods...)
	got, err := src.ListPods(context.Background())
	require.NoError(t, err)
	require.Len(t, got, 2*pageSize+7)
	require.Equal(t, int32(3), api.requests.Load())
}

func TestListPodsErrors(t *testing.T) {
	t.Parallel()
	for _, code := range []int32{401, 403, 410, 500} {
		t.Run(strconv.Itoa(int(code)), func(t *testing.T) {
			t.Parallel()
			src, api := setup(t, stPod("example-worker-1", "worker", stStart, 0))
			api.fail.Store(code)
			pods, err := src.ListPods(context.Background())
			require.Error(t, err)
			require.Nil(t, pods, "never a partial list")
			require.Contains(t, err.Error(), "list pods in namespace pulp")
		})
	}
}

func TestListPodsFailsMidwayWithoutPartialList(t *testing.T) {
	t.Parallel()
	var pods []corev1.Pod
	for i := range pageSize + 1 {
		pods = append(pods, stPod(fmt.Sprintf("example-worker-%04d", i), "worker", stStart, 0))
	}
	src, api := setup(t, pods...)
	lister := src.pods
	// The second page answers 410 Gone, as for an expired continue token.
	src.pods = listerFunc(func(ctx context.Context, opts metav1.ListOptions) (*corev1.PodList, error) {
		if opts.Continue != "" {
			api.fail.Store(410)
		}
		return lister.List(ctx, opts)
	})
	got, err := src.ListPods(context.Background())
	require.Error(t, err)
	require.Nil(t, got)
}

func TestListPodsTimeout(t *testing.T) {
	t.Parallel()
	src, api := setup(t, stPod("example-worker-1", "worker", stStart, 0))
	api.hang.Store(true)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := src.ListPods(ctx)
	require.Error(t, err)
	require.Less(t, time.Since(start), 5*time.Second)
}

type listerFunc func(ctx context.Context, opts metav1.ListOptions) (*corev1.PodList, error)

func (f listerFunc) List(ctx context.Context, opts metav1.ListOptions) (*corev1.PodList, error) {
	return f(ctx, opts)
}

// listPodsByName is what a Source reads of a fake cluster (client-go's fake
// clientset) holding pods, by pod name.
func listPodsByName(t *testing.T, pods ...*corev1.Pod) map[string]heartbeat.Pod {
	t.Helper()
	objs := make([]runtime.Object, len(pods))
	for i, p := range pods {
		objs[i] = p
	}
	src, err := NewSource(fake.NewClientset(objs...).CoreV1().Pods("pulp"), "pulp", DefaultSelector, DefaultContainer)
	require.NoError(t, err)
	got, err := src.ListPods(context.Background())
	require.NoError(t, err)
	byName := map[string]heartbeat.Pod{}
	for _, p := range got {
		byName[p.Name] = p
	}
	return byName
}

// The evidence of container states, with client-go's fake clientset.
func TestPodEvidenceOfContainerStates(t *testing.T) {
	t.Parallel()
	ended := stStart.Add(time.Minute)
	crashed := stPod("example-worker-crashed", "worker", stStart, 3)
	crashed.Status.ContainerStatuses[0].State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}
	crashed.Status.ContainerStatuses[0].LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{FinishedAt: metav1.NewTime(ended)}}
	done := stPod("example-worker-done", "worker", stStart, 0)
	done.Status.Phase = corev1.PodFailed
	done.Status.ContainerStatuses[0].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{FinishedAt: metav1.NewTime(ended)}}
	sidecar := stPod("example-worker-sidecar", "worker", stStart, 0)
	sidecar.Spec.Containers = append(sidecar.Spec.Containers, corev1.Container{Name: "proxy"})
	sidecar.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "proxy", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(stStart)}}}}
	deleting := stPod("example-worker-deleting", "worker", stStart, 0)
	now := metav1.NewTime(ended)
	deleting.DeletionTimestamp = &now
	pending := stPod("example-worker-pending", "worker", stStart, 0)
	pending.Status = corev1.PodStatus{Phase: corev1.PodPending}

	byName := listPodsByName(t, &crashed, &done, &sidecar, &deleting, &pending)
	require.Len(t, byName, 5)
	require.Equal(t, &heartbeat.Container{Name: "worker", FinishedAt: &ended, Restarts: 3, LastTerminated: &heartbeat.Termination{FinishedAt: &ended}}, byName["example-worker-crashed"].Container)
	require.Equal(t, "Failed", byName["example-worker-done"].Phase)
	require.Equal(t, &ended, byName["example-worker-done"].Container.FinishedAt)
	require.Nil(t, byName["example-worker-sidecar"].Container, "no worker container among two")
	require.True(t, byName["example-worker-deleting"].Terminating)
	require.Nil(t, byName["example-worker-pending"].Container)
}

func TestNewSourceChecksSelector(t *testing.T) {
	t.Parallel()
	_, err := NewSource(fake.NewClientset().CoreV1().Pods("pulp"), "pulp", "app in (", DefaultContainer)
	require.ErrorContains(t, err, "kubernetes.selector")
	_, err = NewSource(fake.NewClientset().CoreV1().Pods(""), "", DefaultSelector, DefaultContainer)
	require.ErrorContains(t, err, "kubernetes.namespace")
}

// writeKubeconfig points a kubeconfig at the test server, namespace pulp.
func writeKubeconfig(t *testing.T, url string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	body := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: test, cluster: {server: %q}}]
users: [{name: test, user: {token: not-a-secret}}]
contexts: [{name: test, context: {cluster: test, user: test, namespace: pulp}}]
current-context: test
`, url)
	require.NoError(t, os.WriteFile(path, []byte(body), 0o600))
	return path
}

func TestOpen(t *testing.T) {
	t.Parallel()
	api := &apiServer{pods: []corev1.Pod{stPod("example-worker-1", "worker", stStart, 0)}}
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	kubeconfig := writeKubeconfig(t, srv.URL)
	ctx := context.Background()

	d, err := Open(ctx, Config{Enabled: EnabledFalse})
	require.NoError(t, err)
	require.Nil(t, d.Source)

	_, err = Open(ctx, Config{Enabled: "yes"})
	require.ErrorContains(t, err, "kubernetes.enabled")

	d, err = Open(ctx, Config{Enabled: EnabledAuto, Kubeconfig: kubeconfig})
	require.NoError(t, err)
	require.NotNil(t, d.Source, d.Reason)
	require.Equal(t, "namespace pulp, selector "+DefaultSelector, d.Source.Where(), "the kubeconfig context's namespace")
	pods, err := d.Source.ListPods(ctx)
	require.NoError(t, err)
	require.Len(t, pods, 1)

	d, err = Open(ctx, Config{Enabled: EnabledTrue, Kubeconfig: kubeconfig, Namespace: "other", Selector: "app=x"})
	require.NoError(t, err)
	require.Equal(t, "namespace other, selector app=x", d.Source.Where())

	_, err = Open(ctx, Config{Enabled: EnabledTrue, Kubeconfig: filepath.Join(t.TempDir(), "missing")})
	require.ErrorContains(t, err, "kubeconfig")
}

func TestOpenAutoOffWhenForbidden(t *testing.T) {
	t.Parallel()
	api := &apiServer{}
	api.fail.Store(403)
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	d, err := Open(context.Background(), Config{Enabled: EnabledAuto, Kubeconfig: writeKubeconfig(t, srv.URL)})
	require.NoError(t, err)
	require.Nil(t, d.Source)
	require.Contains(t, d.Reason, "may not list pods")

	// With enabled true the refusal is each pass's, not the configuration's.
	d, err = Open(context.Background(), Config{Enabled: EnabledTrue, Kubeconfig: writeKubeconfig(t, srv.URL)})
	require.NoError(t, err)
	require.NotNil(t, d.Source)

	// A server error does not turn auto off: a later pass may read it.
	api.fail.Store(500)
	d, err = Open(context.Background(), Config{Enabled: EnabledAuto, Kubeconfig: writeKubeconfig(t, srv.URL)})
	require.NoError(t, err)
	require.NotNil(t, d.Source)
}

func TestOpenOutsideACluster(t *testing.T) {
	// Not parallel: it depends on KUBERNETES_SERVICE_HOST being unset.
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	d, err := Open(context.Background(), Config{Enabled: EnabledAuto})
	require.NoError(t, err)
	require.Nil(t, d.Source)
	require.Equal(t, "not running in a Kubernetes cluster", d.Reason)
	_, err = Open(context.Background(), Config{Enabled: EnabledTrue})
	require.ErrorContains(t, err, "in-cluster")
}
