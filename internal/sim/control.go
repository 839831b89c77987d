package sim

import (
	"context"
	"fmt"
	"time"
)

// The fleet's processes as a test sees and drives them: adding, listing,
// killing, restarting, and delaying a heartbeat.

// AddWorker starts one more worker and returns its name.
func (f *Fleet) AddWorker(ctx context.Context) (string, error) {
	p, err := f.addProcess(ctx, AppTypeWorker)
	if err != nil {
		return "", err
	}
	return p.name, nil
}

func (f *Fleet) addProcess(ctx context.Context, appType string) (*process, error) {
	return f.addProcessWith(ctx, appType, nil)
}

// addProcessWith starts a process; a worker runs versions, or
// Config.WorkerVersions when nil.
func (f *Fleet) addProcessWith(ctx context.Context, appType string, versions Versions) (*process, error) {
	if appType == AppTypeWorker && versions == nil {
		versions = f.cfg.WorkerVersions
	}
	f.mu.Lock()
	index := 0
	for _, p := range f.procs {
		if p.appType == appType {
			index++
		}
	}
	ttl := f.cfg.WorkerTTL
	if appType == AppTypeAPI {
		ttl = f.cfg.APITTL
	}
	p := &process{f: f, appType: appType, ttl: ttl, versions: versions}
	if f.cfg.Pods.Enabled {
		p.pod, p.name = f.newPod(appType)
	} else {
		// pids are drawn like a container's: small numbers, unrelated across hosts.
		pid := 1 + f.rng.IntN(999)
		p.name = fmt.Sprintf("%d@%s-%s-%d", pid, f.cfg.Hostname, appType, index)
	}
	if _, dup := f.byName[p.name]; dup {
		f.mu.Unlock()
		return nil, fmt.Errorf("sim: process name %s already used", p.name)
	}
	f.procs = append(f.procs, p)
	f.byName[p.name] = p
	f.mu.Unlock()
	if err := p.launch(ctx); err != nil {
		return nil, err
	}
	return p, nil
}

// ProcessInfo describes one simulated process.
type ProcessInfo struct {
	// Name is the AppStatus name and lock owner name, "<pid>@<host>".
	Name    string
	AppType string
	// AppStatusID is the pulp_id of the current incarnation's row.
	AppStatusID string
	// Alive is false after the process was killed and before a restart.
	Alive bool
	// Incarnation counts starts: 1 for the original, 2 after one restart.
	Incarnation int
	// Pod is the name of the process's pod with Config.Pods, else empty.
	Pod string
	// Versions are the plugin versions a worker runs.
	Versions Versions
	// Removed: scaled down (Terminate), never to run again.
	Removed bool
}

// Processes lists every worker and API process.
func (f *Fleet) Processes() []ProcessInfo {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]ProcessInfo, 0, len(f.procs))
	for _, p := range f.procs {
		info := ProcessInfo{Name: p.name, AppType: p.appType, Alive: !p.killed, Incarnation: p.incarnations,
			Versions: p.versions, Removed: p.removed}
		if p.cur != nil {
			info.AppStatusID = p.cur.rowID
		}
		if p.pod != nil {
			info.Pod = p.pod.name
		}
		out = append(out, info)
	}
	return out
}

// Workers returns the names of the workers, in creation order.
func (f *Fleet) Workers() []string { return f.names(AppTypeWorker) }

// APIs returns the names of the API processes, in creation order.
func (f *Fleet) APIs() []string { return f.names(AppTypeAPI) }

func (f *Fleet) names(appType string) []string {
	var out []string
	for _, p := range f.Processes() {
		if p.AppType == appType {
			out = append(out, p.Name)
		}
	}
	return out
}

// Kill kills a process as kill -9 would: its goroutines end at once, its
// heartbeats stop, its row, claims and locks stay. It returns once the
// process's goroutines are gone.
func (f *Fleet) Kill(name string) error {
	inc, err := f.markKilled(name)
	if err != nil {
		return err
	}
	inc.cancel()
	<-inc.done
	f.recordFault(FaultKill, name, "", "killed on request")
	return nil
}

// markKilled flags the current incarnation of a process as dead.
func (f *Fleet) markKilled(name string) (*incarnation, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p, ok := f.byName[name]
	switch {
	case !ok:
		return nil, fmt.Errorf("sim: no process %s", name)
	case p.killed || p.cur == nil:
		return nil, fmt.Errorf("sim: process %s is not running", name)
	}
	p.killed = true
	if p.pod != nil {
		p.pod.endContainer(time.Now())
	}
	return p.cur, nil
}

// Restart starts a killed process again under the same name, with a new
// AppStatus row, like a container restarted with the same pid and hostname;
// with Config.Pods its container's start and restart count say so.
// With Config.RestartReleasesOwnLocks it first releases the locks registered
// under its name, as pulpcore does.
func (f *Fleet) Restart(ctx context.Context, name string) error {
	f.mu.Lock()
	p, ok := f.byName[name]
	if !ok {
		f.mu.Unlock()
		return fmt.Errorf("sim: no process %s", name)
	}
	if !p.killed || p.restarting {
		f.mu.Unlock()
		return fmt.Errorf("sim: process %s is running", name)
	}
	if p.pod != nil && p.pod.deleted {
		f.mu.Unlock()
		return fmt.Errorf("sim: the pod of process %s was deleted; its replacement runs under another name", name)
	}
	p.restarting = true
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		p.restarting = false
		f.mu.Unlock()
	}()

	if f.cfg.RestartReleasesOwnLocks {
		keys, err := f.rdb.SMembers(ctx, OwnerLocksKey(name)).Result()
		if err != nil {
			return fmt.Errorf("read registry of %s: %w", name, err)
		}
		done := f.noteSelfRelease(name, keys)
		_, _, err = CleanupOwner(ctx, f.rdb, name)
		done()
		if err != nil {
			return err
		}
	}
	if err := p.launch(ctx); err != nil {
		return err
	}
	f.recordFault(FaultRestart, name, "", fmt.Sprintf("incarnation %d", p.incarnation()))
	return nil
}

// DelayHeartbeat holds the process's next heartbeat until gap after its last
// one. A gap above the ttl makes the process late; keep it below ttl +
// HeartbeatGrace for a process that must not be reaped.
func (f *Fleet) DelayHeartbeat(name string, gap time.Duration) error {
	f.mu.Lock()
	p, ok := f.byName[name]
	var inc *incarnation
	if ok && !p.killed {
		inc = p.cur
	}
	f.mu.Unlock()
	if inc == nil {
		return fmt.Errorf("sim: process %s is not running", name)
	}
	inc.holdHeartbeat(gap)
	f.recordFault(FaultHeartbeatDelay, name, "", "gap "+gap.String())
	return nil
}
