package sim

import (
	"context"
	"fmt"
	"time"
)

// Kubernetes pods of the simulated processes (Config.Pods). pulp-operator
// runs every pulpcore worker and API process in a pod of its own, and the
// pod's name is the process's hostname. pulpcore-worker is PID 1 of its
// container (pulp-oci-images' entrypoint execs it), so a worker's owner name
// is "1@<pod>": a container restarted by the kubelet keeps the name, a pod
// the Deployment recreates gets a new one. API processes are gunicorn workers
// under a gunicorn PID 1, so their pids are other small numbers. Fleet.Pods
// shows the pods as the API server would; package internal/sim/simkube serves them to
// lock-reaper's pod source.

// Pod values as the Kubernetes API spells them.
const (
	PodPhaseRunning = "Running"
	// ExitCodeKilled is a container's exit code after SIGKILL (128 + 9).
	ExitCodeKilled = 137
	// DefaultPodTimeResolution is the resolution of the API server's
	// timestamps: RFC 3339 in whole seconds, cut towards the past.
	DefaultPodTimeResolution = time.Second
)

// PodConfig is Config.Pods.
type PodConfig struct {
	// Enabled runs each process as PID 1 (workers) of a pod of its own,
	// names rows with uuid7 ids taken by the process's clock as pulpcore does,
	// and keeps the pods' status for Fleet.Pods.
	Enabled bool
	// TimeResolution cuts container start and finish times down to a
	// multiple of it, as the API server's timestamps are cut to the second
	// [DefaultPodTimeResolution]. A run that scales time down scales it too.
	TimeResolution time.Duration
	// NodeClockOffset is how far ahead of the fleet's clock (which also
	// takes the heartbeats' database time on this one machine) the nodes'
	// clock runs, and so the container times; negative is behind. lock-reaper
	// counts a restart only when the container started more than its
	// clock-skew margin (2 s) after the row's last heartbeat, so that an
	// offset smaller than the margin cannot fake one. Zero by default.
	NodeClockOffset time.Duration
}

func (c PodConfig) withDefaults() (PodConfig, error) {
	setDefault(&c.TimeResolution, DefaultPodTimeResolution)
	if c.TimeResolution < 0 {
		return c, fmt.Errorf("sim: config Pods.TimeResolution: %v is negative", c.TimeResolution)
	}
	return c, nil
}

// Pod is a simulated pod as the Kubernetes API shows it.
type Pod struct {
	Name string
	// Component is pulp-operator's app.kubernetes.io/component label:
	// AppTypeWorker or AppTypeAPI.
	Component string
	// Phase is PodPhaseRunning for as long as the pod exists: with
	// restartPolicy Always a pod stays Running while its container restarts.
	Phase     string
	Created   time.Time
	Container PodContainer
}

// PodContainer is the status of a pod's one container, "worker" or "api",
// with times by the node's clock at the API's resolution.
type PodContainer struct {
	Name string
	// Running says the current incarnation runs: false from a kill to the
	// restart.
	Running bool
	// StartedAt is when the current incarnation, or the last one if none
	// runs, started.
	StartedAt time.Time
	// FinishedAt is when the latest incarnation that ended did end (the
	// current state's when not running, else the last state's); zero when
	// none ended.
	FinishedAt time.Time
	// ExitCode is that incarnation's, ExitCodeKilled after a kill.
	ExitCode int32
	// Restarts counts the kubelet's restarts of the container.
	Restarts int32
}

// podState is a process's pod, by the fleet's clock. Guarded by Fleet.mu.
type podState struct {
	name      string
	component string
	created   time.Time
	running   bool
	started   time.Time
	finished  time.Time
	restarts  int32
	deleted   bool
}

// podAlphabet is the one Kubernetes draws generated names from.
const podAlphabet = "bcdfghjklmnpqrstvwxz2456789"

func (f *Fleet) podString(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = podAlphabet[f.rng.IntN(len(podAlphabet))]
	}
	return string(b)
}

// newPod names a new pod of appType as a Deployment's ReplicaSet does,
// <deployment>-<pod-template-hash>-<suffix>, and the process in it. Called
// under Fleet.mu.
func (f *Fleet) newPod(appType string) (*podState, string) {
	hash, ok := f.podHashes[appType]
	if !ok {
		hash = f.podString(10)
		f.podHashes[appType] = hash
	}
	pod := &podState{name: fmt.Sprintf("%s-%s-%s-%s", f.cfg.Hostname, appType, hash, f.podString(5)), component: appType, created: time.Now()}
	pid := 1
	if appType == AppTypeAPI {
		pid = 2 + f.rng.IntN(998)
	}
	return pod, fmt.Sprintf("%d@%s", pid, pod.name)
}

// startContainer records the container's start, a restart after the first,
// just before the process creates its row. Called under Fleet.mu.
func (s *podState) startContainer(now time.Time) {
	if !s.started.IsZero() {
		s.restarts++
	}
	s.running, s.started = true, now
}

// endContainer records the container's end by a kill. Called under Fleet.mu.
func (s *podState) endContainer(now time.Time) {
	if s.running {
		s.running, s.finished = false, now
	}
}

// nodeTime is a fleet-clock time as the pod's status gives it.
func (f *Fleet) nodeTime(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return t.Add(f.cfg.Pods.NodeClockOffset).Truncate(f.cfg.Pods.TimeResolution).UTC()
}

// Pods lists the pods that exist, in creation order; nil without
// Config.Pods.Enabled. A deleted pod is gone from the list at once, as after
// a forced deletion.
func (f *Fleet) Pods() []Pod {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []Pod
	for _, p := range f.procs {
		s := p.pod
		if s == nil || s.deleted {
			continue
		}
		c := PodContainer{Name: s.component, Running: s.running, StartedAt: f.nodeTime(s.started),
			FinishedAt: f.nodeTime(s.finished), Restarts: s.restarts}
		if !s.finished.IsZero() {
			c.ExitCode = ExitCodeKilled
		}
		out = append(out, Pod{Name: s.name, Component: s.component, Phase: PodPhaseRunning, Created: f.nodeTime(s.created), Container: c})
	}
	return out
}

// DeletePod deletes the pod of process name, as `kubectl delete pod --force
// --grace-period=0` or a lost node does: the process dies as by kill -9 (its
// row, claims and locks stay), the pod leaves the list, and the Deployment's
// replacement starts in a new pod under a new name, which DeletePod returns.
func (f *Fleet) DeletePod(ctx context.Context, name string) (replacement string, err error) {
	f.mu.Lock()
	p, ok := f.byName[name]
	switch {
	case !ok:
		f.mu.Unlock()
		return "", fmt.Errorf("sim: no process %s", name)
	case p.pod == nil || p.pod.deleted:
		f.mu.Unlock()
		return "", fmt.Errorf("sim: process %s has no pod to delete", name)
	}
	p.pod.deleted = true
	var inc *incarnation
	if !p.killed && p.cur != nil {
		p.killed, inc = true, p.cur
		p.pod.endContainer(time.Now())
	}
	f.mu.Unlock()
	if inc != nil {
		inc.cancel()
		<-inc.done
		f.recordFault(FaultKill, name, "", "killed with its pod")
	}
	np, err := f.addProcess(ctx, p.appType)
	if err != nil {
		return "", fmt.Errorf("start the replacement of pod %s: %w", p.pod.name, err)
	}
	return np.name, nil
}
