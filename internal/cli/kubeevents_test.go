package cli

import (
	"encoding/json"
	"fmt"
	"github.com/lock-reaper/lock-reaper/internal/testing/passtest"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/internal/exitcode"
	"github.com/lock-reaper/lock-reaper/internal/kubeevents"
	"github.com/lock-reaper/lock-reaper/internal/testing/kubeapi"
	"github.com/lock-reaper/lock-reaper/reaper"
)

// eventsEnv points the reaper at api, with Kubernetes evidence on and the
// reaper's own pod named as the chart's downward API names it.
func eventsEnv(t *testing.T, base map[string]string, api *kubeapi.Server) map[string]string {
	t.Helper()
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, os.WriteFile(kubeconfig, []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: test, cluster: {server: %q}}]
users: [{name: test, user: {token: not-a-secret}}]
contexts: [{name: test, context: {cluster: test, user: test, namespace: pulp}}]
current-context: test
`, api.URL())), 0o600))
	env := map[string]string{}
	for k, v := range base {
		env[k] = v
	}
	env["REAPER_KUBERNETES_ENABLED"] = "true"
	env["KUBECONFIG"] = kubeconfig
	env["POD_NAME"], env["POD_NAMESPACE"], env["POD_UID"] = "lock-reaper-7c9f-abcde", "pulp", "00000000-0000-4000-8000-0000000000ff"
	return env
}

// deadPodFleet: a worker whose container the kubelet reports OOM-killed,
// holding the locks of a running task, of a waiting task it claimed and of
// a finished one; two live workers with their pods.
func deadPodFleet(t *testing.T) (*opsFleet, *kubeapi.Server, string) {
	f := newOpsFleet(t)
	api := kubeapi.New(t)
	dead, pod := "1@example-worker-6d9f-aaaaa", "example-worker-6d9f-aaaaa"
	started := time.Now().Add(-time.Hour)
	for _, name := range []string{pod, "example-worker-6d9f-bbbbb", "example-worker-6d9f-ccccc"} {
		require.NoError(t, api.Create(kubeapi.NewPod(kubeapi.PodSpec{Namespace: "pulp", Name: name, Component: "worker", Node: "node-a", Started: started})))
	}
	id := f.worker(dead, 10*time.Minute)
	f.worker("1@example-worker-6d9f-bbbbb", 0)
	f.worker("1@example-worker-6d9f-ccccc", 0)
	running := f.task("running", id, []string{passtest.Repo(), "shared:" + passtest.Domain}, time.Hour)
	f.acquire(dead, running, f.reservedOf(running)...)
	waiting := f.task("waiting", id, []string{passtest.Repo()}, time.Hour)
	f.acquire(dead, waiting, f.reservedOf(waiting)...)
	f.acquire(dead, f.task("completed", id, []string{passtest.Repo()}, 2*time.Hour))
	require.NoError(t, api.ContainerTerminated("pulp", pod, "worker", 137, "OOMKilled", time.Now()))
	return f, api, pod
}

func (f *opsFleet) reservedOf(taskID string) []string {
	f.t.Helper()
	var r []string
	require.NoError(f.t, f.db.Pool.QueryRow(f.ctx, `SELECT reserved_resources_record FROM core_task WHERE pulp_id = $1`, taskID).Scan(&r))
	return r
}

// TestOnceRecordsPodEvents: `once` that frees a dead worker's locks and
// tasks tells it on the worker's pod, one Event per reason, with the
// counts, never one per lock.
func TestOnceRecordsPodEvents(t *testing.T) {
	t.Parallel()
	f, api, pod := deadPodFleet(t)
	code, out, stderr := run(t, eventsEnv(t, f.env, api), "once", "--output", "json")
	require.Equal(t, exitcode.OK, code, stderr)
	var rep reaper.Report
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	require.Positive(t, rep.Summary.Released)

	uid := string(api.Pod("pulp", pod).UID)
	byReason := map[string]kubeapi.Event{}
	for _, e := range api.Events() {
		require.Equal(t, pod, e.Regarding.Name, "every Event is about the dead worker's pod: %s", e)
		require.Equal(t, uid, string(e.Regarding.UID))
		require.Equal(t, "lock-reaper", e.ReportingController)
		require.Equal(t, "lock-reaper-7c9f-abcde", e.ReportingInstance)
		_, twice := byReason[e.Reason]
		require.False(t, twice, "one %s Event per pass", e.Reason)
		byReason[e.Reason] = e
	}
	require.Len(t, byReason, 3, "%v", api.Events())
	require.Equal(t, fmt.Sprintf("lock-reaper released %d locks held by 1@%s (", rep.Summary.Released, pod),
		byReason[kubeevents.ReasonLocksReleased].Note[:len(fmt.Sprintf("lock-reaper released %d locks held by 1@%s (", rep.Summary.Released, pod))])
	require.Contains(t, byReason[kubeevents.ReasonLocksReleased].Note, "3 task locks")
	require.Contains(t, byReason[kubeevents.ReasonTasksCanceled].Note, "ended 1 lost task of 1@"+pod)
	require.Equal(t, "Warning", byReason[kubeevents.ReasonTasksCanceled].Type)
	require.Contains(t, byReason[kubeevents.ReasonTaskRequeued].Note, "requeued 1 task claimed by 1@"+pod)

	// Nothing left to do: no Event.
	code, _, stderr = run(t, eventsEnv(t, f.env, api), "once")
	require.Equal(t, exitcode.OK, code, stderr)
	require.Len(t, api.Events(), 3)
}

// TestOnceEventsRefused: a Role without create on events costs the Events,
// counted in the pushed metrics and said once in the log, never the pass.
func TestOnceEventsRefused(t *testing.T) {
	t.Parallel()
	f, api, _ := deadPodFleet(t)
	api.FailEvents(http.StatusForbidden)
	gw := newFakePushgateway(t)
	env := eventsEnv(t, f.env, api)
	env["REAPER_PUSHGATEWAY_URL"] = gw.url()
	code, _, stderr := run(t, env, "once")
	require.Equal(t, exitcode.OK, code, stderr)
	require.Empty(t, api.Events())
	require.Equal(t, 1, strings.Count(stderr, "kubernetes events not recorded"), stderr)
	require.Contains(t, stderr, `cannot create resource \"events\"`)
	pushes := gw.received()
	require.Len(t, pushes, 1)
	require.Equal(t, 3.0, pushes[0].samples["lock_reaper_kubernetes_event_failures_total"])
	require.Equal(t, 1.0, pushes[0].samples[`lock_reaper_passes_total{result="success"}`])
}

// TestOnceMassDeathHoldEvent: a pass the mass-death guard holds back tells
// it on the reaper's own pod, whose name the downward API gives.
func TestOnceMassDeathHoldEvent(t *testing.T) {
	t.Parallel()
	f := newOpsReleaseFleet(t)
	api := kubeapi.New(t)
	code, _, stderr := run(t, eventsEnv(t, f.env, api), "once")
	require.Equal(t, exitcode.Guarded, code, stderr)
	// The finished task's leaked lock goes whatever the guard: that
	// release is told too, on the reaper's pod, no pod showing 1@dead.
	var holds []kubeapi.Event
	for _, e := range api.Events() {
		if e.Reason == kubeevents.ReasonMassDeathHold {
			holds = append(holds, e)
		}
	}
	require.Len(t, holds, 1, "%v", api.Events())
	e := holds[0]
	require.Equal(t, "Warning", e.Type)
	require.Equal(t, "lock-reaper-7c9f-abcde", e.Regarding.Name)
	require.Equal(t, "pulp", e.Regarding.Namespace)
	require.Equal(t, "00000000-0000-4000-8000-0000000000ff", string(e.Regarding.UID))
	require.Regexp(t, `^lock-reaper holds back \d+ locks and \d+ tasks? of 2 dead owners: 2 of 3 worker rows are dead`, e.Note)
}
