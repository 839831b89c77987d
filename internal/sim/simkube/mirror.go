package simkube

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/lock-reaper/lock-reaper/internal/ctxwait"
	"github.com/lock-reaper/lock-reaper/internal/sim"
	"github.com/lock-reaper/lock-reaper/internal/testing/kubeapi"
)

// Mirror keeps a stand-in API server's pods in step with a simulated
// fleet's, writing each change as the kubelet and the API server would: a
// new pod created, its container's start, a kill reported as the state
// terminated, a restart as lastState with restartCount grown, and a deleted
// pod's containers reported stopped before the kubelet's final delete. A
// frozen pod (its node crashed) gets no update from its kubelet any more.
type Mirror struct {
	api  *kubeapi.Server
	pods func() []sim.Pod

	mu     sync.Mutex
	known  map[string]sim.Pod
	frozen map[string]bool
	ends   map[string][]time.Time
}

// NewMirror mirrors the pods pods returns (a fleet's Pods) into api.
func NewMirror(api *kubeapi.Server, pods func() []sim.Pod) *Mirror {
	return &Mirror{api: api, pods: pods, known: map[string]sim.Pod{}, frozen: map[string]bool{}, ends: map[string][]time.Time{}}
}

// Run syncs every period until ctx is cancelled; the kubelet's status
// updates lag a container's change by about that much.
func (m *Mirror) Run(ctx context.Context, period time.Duration) error {
	for {
		if err := m.Sync(); err != nil {
			return err
		}
		if !ctxwait.Sleep(ctx, period) {
			return nil
		}
	}
}

// Freeze stops the kubelet's updates of a pod, as its node's crash does:
// the pod stays as it was, Running, with its container running, until
// the node lifecycle controller and the taint manager change it.
func (m *Mirror) Freeze(pod string) {
	m.mu.Lock()
	m.frozen[pod] = true
	m.mu.Unlock()
}

// Ends are the moments the kubelet's reports of a container's end were
// written for the pod, oldest first.
func (m *Mirror) Ends(pod string) []time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]time.Time(nil), m.ends[pod]...)
}

// Sync writes the changes since the last one.
func (m *Mirror) Sync() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	seen := map[string]bool{}
	for _, p := range m.pods() {
		seen[p.Name] = true
		prev, ok := m.known[p.Name]
		if !ok {
			if err := m.create(p); err != nil {
				return err
			}
		} else if !m.frozen[p.Name] {
			if err := m.update(prev, p); err != nil {
				return err
			}
		}
		m.known[p.Name] = p
	}
	for name, prev := range m.known {
		if seen[name] || m.frozen[name] {
			continue
		}
		// The pod was deleted: its kubelet reports the containers stopped,
		// then deletes the object (grace period 0).
		now := time.Now()
		if prev.Container.Running {
			if err := m.api.ContainerTerminated(Namespace, name, prev.Container.Name, 143, "Error", now); err != nil {
				return err
			}
			m.ends[name] = append(m.ends[name], now)
		}
		if err := m.api.KubeletFinishDelete(Namespace, name, now); err != nil {
			return err
		}
		delete(m.known, name)
	}
	return nil
}

func (m *Mirror) create(p sim.Pod) error {
	obj := kubeapi.NewPod(kubeapi.PodSpec{Namespace: Namespace, Name: p.Name, Component: p.Component,
		Containers: []string{p.Container.Name}, Node: "node-" + p.Name[len(p.Name)-1:], Started: p.Container.StartedAt})
	obj.CreationTimestamp.Time = p.Created
	if !p.Container.Running {
		obj = kubeapi.Waiting(obj)
	}
	if err := m.api.Create(obj); err != nil {
		return fmt.Errorf("mirror pod %s: %w", p.Name, err)
	}
	return nil
}

func (m *Mirror) update(prev, p sim.Pod) error {
	c, was := p.Container, prev.Container
	now := time.Now()
	switch {
	case c.Restarts > was.Restarts:
		if was.Running {
			// Killed and restarted between two updates.
			m.ends[p.Name] = append(m.ends[p.Name], now)
		}
		return m.api.ContainerRestarted(Namespace, p.Name, c.Name, c.StartedAt)
	case was.Running && !c.Running:
		m.ends[p.Name] = append(m.ends[p.Name], now)
		return m.api.ContainerTerminated(Namespace, p.Name, c.Name, c.ExitCode, "Error", c.FinishedAt)
	case !was.Running && c.Running:
		return m.api.ContainerStarted(Namespace, p.Name, c.Name, c.StartedAt)
	}
	return nil
}
