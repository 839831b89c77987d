package reaper_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/lock-reaper/lock-reaper/heartbeat"
	"github.com/lock-reaper/lock-reaper/heartbeat/kube"
	"github.com/lock-reaper/lock-reaper/internal/sim"
	"github.com/lock-reaper/lock-reaper/reaper"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
	"github.com/lock-reaper/lock-reaper/reaper/redislocks"
)

// The passes of these tests read pod objects as Kubernetes' own controllers
// and the kubelet leave them, through kube.Source over client-go's fake
// clientset: conditions, deletion, DisruptionTarget, phases, lastState.

// kpErrSource is a PodSource whose list fails.
type kpErrSource struct{ err error }

func (s kpErrSource) ListPods(context.Context) ([]heartbeat.Pod, error) { return nil, s.err }
func (s kpErrSource) Where() string                                     { return "namespace pulp" }

// kpCluster is a namespace of pods a pass lists; hook, when set, runs inside
// each list, before it answers (a list that is slow on purpose).
type kpCluster struct {
	t      *testing.T
	client *fake.Clientset
	src    *kube.Source
	mu     sync.Mutex
	hook   func()
}

func newKPCluster(t *testing.T, pods ...*corev1.Pod) *kpCluster {
	c := &kpCluster{t: t, client: fake.NewClientset()}
	for _, p := range pods {
		c.put(p)
	}
	src, err := kube.NewSource(c.client.CoreV1().Pods("pulp"), "pulp", kube.DefaultSelector, kube.DefaultContainer)
	require.NoError(t, err)
	c.src = src
	return c
}

func (c *kpCluster) ListPods(ctx context.Context) ([]heartbeat.Pod, error) {
	c.mu.Lock()
	hook := c.hook
	c.mu.Unlock()
	if hook != nil {
		hook()
	}
	return c.src.ListPods(ctx)
}

func (c *kpCluster) Where() string { return c.src.Where() }

// put creates or replaces a pod.
func (c *kpCluster) put(p *corev1.Pod) {
	pods := c.client.CoreV1().Pods("pulp")
	if _, err := pods.Update(context.Background(), p, metav1.UpdateOptions{}); err == nil {
		return
	}
	_, err := pods.Create(context.Background(), p, metav1.CreateOptions{})
	require.NoError(c.t, err)
}

func (c *kpCluster) remove(name string) {
	require.NoError(c.t, c.client.CoreV1().Pods("pulp").Delete(context.Background(), name, metav1.DeleteOptions{}))
}

// kpPod is a worker pod as pulp-operator labels it and the kubelet reports
// it running and ready: accepted two hours ago, its worker container
// running since started after restarts restarts.
func kpPod(name string, started time.Time, restarts int32) *corev1.Pod {
	podStart := metav1.NewTime(time.Now().Add(-2 * time.Hour))
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "pulp", UID: types.UID("uid-" + name), Labels: map[string]string{
			"app.kubernetes.io/managed-by": "pulp-operator", "app.kubernetes.io/component": "worker",
		}},
		Spec: corev1.PodSpec{NodeName: "node-a", Containers: []corev1.Container{{Name: "worker"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, StartTime: &podStart, ContainerStatuses: []corev1.ContainerStatus{{
			Name: "worker", RestartCount: restarts, Ready: true,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(started)}},
		}}},
	}
	for _, t := range []corev1.PodConditionType{corev1.PodInitialized, corev1.PodReady, corev1.ContainersReady, corev1.PodScheduled} {
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: t, Status: corev1.ConditionTrue})
	}
	return p
}

func kpCondition(p *corev1.Pod, t corev1.PodConditionType, s corev1.ConditionStatus, reason string) *corev1.Pod {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == t {
			p.Status.Conditions[i].Status, p.Status.Conditions[i].Reason = s, reason
			return p
		}
	}
	p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: t, Status: s, Reason: reason})
	return p
}

// kpNodeLost is p ~40 s after its node stopped reporting: the node
// lifecycle controller's MarkPodsNotReady turned Ready False; phase and
// container status are the kubelet's last.
func kpNodeLost(p *corev1.Pod) *corev1.Pod {
	return kpCondition(p, corev1.PodReady, corev1.ConditionFalse, "")
}

// kpTaintEvicted is p ~300 s after: the taint manager added DisruptionTarget
// and deleted it; it stays Terminating while the node is away.
func kpTaintEvicted(p *corev1.Pod) *corev1.Pod {
	kpCondition(kpNodeLost(p), corev1.DisruptionTarget, corev1.ConditionTrue, "DeletionByTaintManager")
	now, grace := metav1.Now(), int64(30)
	p.DeletionTimestamp, p.DeletionGracePeriodSeconds = &now, &grace
	return p
}

// kpEvicted is p evicted by the kubelet for node pressure: phase Failed,
// reason Evicted, its worker container terminated at finished.
func kpEvicted(p *corev1.Pod, finished time.Time) *corev1.Pod {
	kpCondition(p, corev1.PodReady, corev1.ConditionFalse, "PodFailed")
	kpCondition(p, corev1.ContainersReady, corev1.ConditionFalse, "PodFailed")
	kpCondition(p, corev1.DisruptionTarget, corev1.ConditionTrue, "TerminationByKubelet")
	p.Status.Phase, p.Status.Reason, p.Status.Message = corev1.PodFailed, "Evicted", "The node was low on resource: memory."
	cs := &p.Status.ContainerStatuses[0]
	cs.Ready = false
	cs.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Error", ExitCode: 137,
		StartedAt: cs.State.Running.StartedAt, FinishedAt: metav1.NewTime(finished)}}
	return p
}

// kpOOMRestarted is p whose worker container was OOM-killed at killed and
// restarted by the kubelet at started.
func kpOOMRestarted(p *corev1.Pod, killed, started time.Time) *corev1.Pod {
	cs := &p.Status.ContainerStatuses[0]
	cs.LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "OOMKilled", ExitCode: 137,
		StartedAt: cs.State.Running.StartedAt, FinishedAt: metav1.NewTime(killed)}}
	cs.State.Running.StartedAt = metav1.NewTime(started)
	cs.RestartCount++
	return p
}

// kpWorker inserts a worker row created created ago (its uuid7 id), whose
// last heartbeat is age ago on the database clock.
func (f *fixture) kpWorker(name string, age, created time.Duration) string {
	f.T.Helper()
	id := sim.NewUUID7(time.Now().Add(-created))
	_, err := f.DB.Pool.Exec(f.Ctx, `INSERT INTO core_appstatus (pulp_id, app_type, name, ttl, last_heartbeat)
		VALUES ($1, 'worker', $2, interval '30 seconds', now() - make_interval(secs => $3))`, id, name, age.Seconds())
	require.NoError(f.T, err)
	return id
}

// kpFleet inserts three live workers and their pods, so that every view is
// trusted and no mass-death guard trips, and returns the pods.
func (f *fixture) kpFleet() []*corev1.Pod {
	var pods []*corev1.Pod
	for i := range 3 {
		name := fmt.Sprintf("live-%d", i)
		f.kpWorker("1@"+name, time.Second, time.Hour)
		pods = append(pods, kpPod(name, time.Now().Add(-90*time.Minute), 0))
	}
	return pods
}

// kpRunningTask gives owner a running task whose app_lock is row, holding its
// task lock and an exclusive resource; it returns the task and the resource.
func (f *fixture) kpRunningTask(owner, row string) (taskID, res string) {
	res = "prn:core.domain:" + sim.NewUUID()
	taskID = f.Task(judge.StateRunning, row, []string{res}, -1)
	f.Acquire(owner, taskID, []string{res}, false)
	return taskID, res
}

func (f *fixture) kpKept(rep *reaper.Report, owner, taskID, res string) {
	f.T.Helper()
	require.Equal(f.T, owner, f.Get(judge.TaskKeyPrefix+taskID))
	require.Equal(f.T, owner, f.Get(judge.ResourceKeyPrefix+res))
	state, _, _, _ := f.TaskRow(taskID)
	require.Equal(f.T, judge.StateRunning, state)
}

func (f *fixture) kpReleased(rep *reaper.Report, owner, taskID, res string) *reaper.Finding {
	f.T.Helper()
	fd := findingFor(rep, judge.TaskKeyPrefix+taskID, owner)
	require.NotNil(f.T, fd)
	require.Equal(f.T, reaper.ResultReleased, fd.Result)
	require.Empty(f.T, f.Get(judge.TaskKeyPrefix+taskID))
	require.Empty(f.T, f.Get(judge.ResourceKeyPrefix+res))
	state, _, _, _ := f.TaskRow(taskID)
	require.Equal(f.T, judge.StateCanceled, state)
	return fd
}

func (f *fixture) kpPass(src reaper.PodSource, mode string) *reaper.Report {
	f.T.Helper()
	return f.pass(f.reaper(func(c *reaper.Config) { c.PodSource = src }), mode)
}

// OOM kill and restart: the kubelet reports lastState.terminated OOMKilled,
// exit 137, restartCount + 1. The old incarnation's row heartbeated 8 s ago
// (alive by its heartbeat); its task and locks are freed in the first pass.
func TestKubernetesPassOOMRestartFreedAtOnce(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	pods := f.kpFleet()
	row := f.kpWorker("1@w", 8*time.Second, time.Hour)
	taskID, res := f.kpRunningTask("1@w", row)
	now := time.Now()
	cluster := newKPCluster(t, append(pods, kpOOMRestarted(kpPod("w", now.Add(-time.Hour-time.Minute), 0), now.Add(-3*time.Second), now.Add(-2*time.Second)))...)

	rep := f.kpPass(cluster, reaper.ModeOnce)
	require.Equal(t, reaper.KubernetesRead, rep.Kubernetes.Read)
	fd := f.kpReleased(rep, "1@w", taskID, res)
	require.Equal(t, heartbeat.PodRestarted, fd.Evidence().Kubernetes.Rule)
	require.Equal(t, 1, rep.Kubernetes.OwnersByEvidence[heartbeat.PodRestarted])
	owner := kpOwner(rep, "1@w")
	require.NotNil(t, owner.Kubernetes, "the pass report's owners carry the pod evidence")
	require.Equal(t, "OOMKilled", owner.Kubernetes.Container.LastTerminated.Reason)
}

// Eviction by the kubelet: phase Failed, reason Evicted, containers
// terminated: freed at once.
func TestKubernetesPassEvictedFreedAtOnce(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	pods := f.kpFleet()
	row := f.kpWorker("1@w", 8*time.Second, time.Hour)
	taskID, res := f.kpRunningTask("1@w", row)
	cluster := newKPCluster(t, append(pods, kpEvicted(kpPod("w", time.Now().Add(-time.Hour-time.Minute), 0), time.Now().Add(-3*time.Second)))...)

	rep := f.kpPass(cluster, reaper.ModeOnce)
	fd := f.kpReleased(rep, "1@w", taskID, res)
	require.Equal(t, heartbeat.PodContainerEnded, fd.Evidence().Kubernetes.Rule)
	require.Equal(t, "Evicted", fd.Evidence().Kubernetes.Reason)
}

// A crashed node: at 40 s its pods lose Ready but keep phase Running and a
// running container; at 300 s they also get DisruptionTarget and a deletion
// timestamp. Neither holds the dead worker: its locks go when the ordinary
// rule says so, exactly as without Kubernetes.
func TestKubernetesPassNodeCrashNotHeld(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		pod  func(*corev1.Pod) *corev1.Pod
		age  time.Duration
	}{
		{"at 40 s: Ready False, phase Running", kpNodeLost, 90 * time.Second},
		{"at 300 s: deletionTimestamp and DisruptionTarget", kpTaintEvicted, 330 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			pods := f.kpFleet()
			row := f.kpWorker("1@w", tc.age, time.Hour)
			taskID, res := f.kpRunningTask("1@w", row)
			cluster := newKPCluster(t, append(pods, tc.pod(kpPod("w", time.Now().Add(-2*time.Hour), 0)))...)

			rep := f.kpPass(cluster, reaper.ModeOnce)
			fd := f.kpReleased(rep, "1@w", taskID, res)
			require.Equal(t, judge.VerdictOwnerDead, fd.Verdict)
			require.Equal(t, heartbeat.PodSeen, fd.Evidence().Kubernetes.Rule)
		})
	}
}

// A worker late past ttl + grace whose pod could run is held, and warned of.
func TestKubernetesPassLateButAliveWorkerKept(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	pods := f.kpFleet()
	row := f.kpWorker("1@slow", 90*time.Second, time.Hour)
	taskID, res := f.kpRunningTask("1@slow", row)
	cluster := newKPCluster(t, append(pods, kpPod("slow", time.Now().Add(-2*time.Hour), 0))...)

	rep := f.kpPass(cluster, reaper.ModeOnce)
	fd := findingFor(rep, judge.TaskKeyPrefix+taskID, "1@slow")
	require.NotNil(t, fd)
	require.Equal(t, judge.VerdictPending, fd.Verdict)
	require.Equal(t, heartbeat.PodAliveNotHeartbeating, fd.Evidence().Kubernetes.Rule)
	f.kpKept(rep, "1@slow", taskID, res)
	require.Equal(t, 1, rep.Kubernetes.OwnersByEvidence[heartbeat.PodAliveNotHeartbeating])

	// Without Kubernetes the same worker loses its locks and its task.
	rep = f.pass(f.reaper(nil), reaper.ModeOnce)
	require.Nil(t, rep.Kubernetes)
	f.kpReleased(rep, "1@slow", taskID, res)
}

// A late worker never seen as a pod (a VM worker, a pod relabelled out of the
// selector) is left alone, pass after pass, exactly as without Kubernetes;
// a pod an earlier pass saw that is gone now frees its worker's locks.
func TestKubernetesPassAbsenceOnlyOfAPodSeen(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	pods := f.kpFleet()
	vmRow := f.kpWorker("1@vm-worker", 40*time.Second, time.Hour)
	vmTask, vmRes := f.kpRunningTask("1@vm-worker", vmRow)
	cluster := newKPCluster(t, append(pods, kpPod("w", time.Now().Add(-2*time.Hour), 0))...)
	r := f.reaper(func(c *reaper.Config) { c.PodSource = cluster })

	// The first pass sees the pod w (its worker is not yet written).
	rep := f.pass(r, reaper.ModeOnce)
	fd := findingFor(rep, judge.TaskKeyPrefix+vmTask, "1@vm-worker")
	require.Equal(t, judge.VerdictPending, fd.Verdict)
	require.Equal(t, heartbeat.PodNotInView, fd.Evidence().Kubernetes.Rule)
	f.kpKept(rep, "1@vm-worker", vmTask, vmRes)

	// Now the pod w is gone; its worker's row is late. The VM worker, late
	// too and never seen, is judged by its heartbeat alone, and takes pod
	// evidence from nobody else: 1@w's locks are freed by pod-gone.
	row := f.kpWorker("1@w", 40*time.Second, time.Hour)
	taskID, res := f.kpRunningTask("1@w", row)
	cluster.remove("w")
	rep = f.pass(r, reaper.ModeOnce)
	fd = f.kpReleased(rep, "1@w", taskID, res)
	require.Equal(t, heartbeat.PodGone, fd.Evidence().Kubernetes.Rule)
	require.Equal(t, "uid-w", fd.Evidence().Kubernetes.UID)
	require.Equal(t, heartbeat.PodNotInView, findingFor(rep, judge.TaskKeyPrefix+vmTask, "1@vm-worker").Evidence().Kubernetes.Rule)
	f.kpKept(rep, "1@vm-worker", vmTask, vmRes)

	// Once the VM worker is dead by its heartbeat the ordinary rule frees
	// its locks, in a one-shot run too (a new reaper).
	_, err := f.DB.Pool.Exec(f.Ctx, `UPDATE core_appstatus SET last_heartbeat = now() - interval '5 minutes' WHERE pulp_id = $1`, vmRow)
	require.NoError(t, err)
	rep = f.kpPass(cluster, reaper.ModeOnce)
	fd = f.kpReleased(rep, "1@vm-worker", vmTask, vmRes)
	require.Equal(t, judge.VerdictOwnerDead, fd.Verdict)
	require.Equal(t, heartbeat.PodNotInView, fd.Evidence().Kubernetes.Rule)
}

// The wrong context: the list is another cluster's, without the live
// workers' pods, where a pod of the same name restarted 10 s ago. The view is
// not trusted: the restart rule is not applied and the late worker keeps its
// locks.
func TestKubernetesPassWrongContextUntrusted(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.kpFleet()
	row := f.kpWorker("1@w", 40*time.Second, time.Hour)
	taskID, res := f.kpRunningTask("1@w", row)
	now := time.Now()
	cluster := newKPCluster(t, kpOOMRestarted(kpPod("w", now.Add(-time.Hour-time.Minute), 0), now.Add(-11*time.Second), now.Add(-10*time.Second)))

	rep := f.kpPass(cluster, reaper.ModeOnce)
	fd := findingFor(rep, judge.TaskKeyPrefix+taskID, "1@w")
	require.Equal(t, judge.VerdictPending, fd.Verdict)
	require.Equal(t, heartbeat.PodSeen, fd.Evidence().Kubernetes.Rule)
	f.kpKept(rep, "1@w", taskID, res)
	require.Equal(t, 3, rep.Kubernetes.OwnersByEvidence[heartbeat.PodOutsideView])
}

// The pods are listed before the database is read: a same-name successor
// that starts while the list runs (slow on purpose) has written its row and
// taken its shared domain membership by the time the database is read, so
// the name guard sees it alive and its membership stays, while the ended
// incarnation's task and exclusive lock are freed.
func TestKubernetesPassSlowListSuccessorKeepsItsLock(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	pods := f.kpFleet()
	old := f.kpWorker("1@w", 8*time.Second, time.Hour)
	domain := "prn:core.domain:" + sim.NewUUID()
	oldTask, oldRes := f.kpRunningTask("1@w", old)
	f.Acquire("1@w", oldTask, []string{"shared:" + domain}, false)
	now := time.Now()
	cluster := newKPCluster(t, append(pods, kpOOMRestarted(kpPod("w", now.Add(-time.Hour-time.Minute), 0), now.Add(-3*time.Second), now.Add(-2*time.Second)))...)
	var newTask string
	cluster.hook = func() {
		time.Sleep(300 * time.Millisecond)
		successor := f.kpWorker("1@w", 0, 0)
		newTask = f.Task(judge.StateRunning, successor, []string{"shared:" + domain}, -1)
		f.Acquire("1@w", newTask, []string{"shared:" + domain}, false)
	}

	rep := f.kpPass(cluster, reaper.ModeOnce)
	require.Equal(t, "1@w", f.Get(judge.TaskKeyPrefix+newTask), "the successor's task lock stays")
	require.Contains(t, f.Members(judge.ResourceKeyPrefix+domain), "1@w", "the successor's shared domain membership stays")
	state, _, _, _ := f.TaskRow(newTask)
	require.Equal(t, judge.StateRunning, state)
	require.Empty(t, f.Get(judge.TaskKeyPrefix+oldTask), "the ended incarnation's task lock is freed")
	require.Empty(t, f.Get(judge.ResourceKeyPrefix+oldRes))
	state, _, _, _ = f.TaskRow(oldTask)
	require.Equal(t, judge.StateCanceled, state)
	require.Equal(t, reaper.KubernetesRead, rep.Kubernetes.Read)
}

func TestKubernetesPassUnavailableJudgesAsWithout(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.kpFleet()
	row := f.kpWorker("1@w", 40*time.Second, time.Hour)
	taskID, res := f.kpRunningTask("1@w", row)
	rep := f.kpPass(kpErrSource{err: errors.New("pods is forbidden")}, reaper.ModeOnce)
	require.Equal(t, reaper.KubernetesUnavailable, rep.Kubernetes.Read)
	require.Contains(t, rep.Kubernetes.Error, "forbidden")
	require.Equal(t, judge.VerdictPending, findingFor(rep, judge.TaskKeyPrefix+taskID, "1@w").Verdict, "without pods the row is only late")
	f.kpKept(rep, "1@w", taskID, res)
}

// An audit remembers no pods in Redis: it writes nothing.
func TestKubernetesPassAuditRemembersNothing(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	cluster := newKPCluster(t, f.kpFleet()...)
	f.kpPass(cluster, reaper.ModeAudit)
	require.Zero(t, f.Redis.Client.Exists(f.Ctx, redislocks.PodsSeenKey).Val())
	f.kpPass(cluster, reaper.ModeOnce)
	require.Len(t, f.Redis.Client.HGetAll(f.Ctx, redislocks.PodsSeenKey).Val(), 3)
	require.Positive(t, f.Redis.Client.TTL(f.Ctx, redislocks.PodsSeenKey).Val())
}

func kpOwner(rep *reaper.Report, name string) *reaper.OwnerReport {
	for i := range rep.LockOwners {
		if rep.LockOwners[i].Name == name {
			return &rep.LockOwners[i]
		}
	}
	return nil
}
