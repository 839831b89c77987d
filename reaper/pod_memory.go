package reaper

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/lock-reaper/lock-reaper/heartbeat"
	"github.com/lock-reaper/lock-reaper/reaper/redislocks"
)

// The pods earlier complete lists showed, by name: a pod's absence proves a
// death only for a pod the reaper has seen (docs/verdicts.md). A long-running
// reaper keeps them in memory; every pass that writes also keeps them in
// Redis (redislocks.WriteSeenPods), so that one-shot runs (the CronJob) and
// other replicas know them.

// podMemory is the reaper's own memory of the pods it has seen, by view.
type podMemory struct {
	mu     sync.Mutex
	byName map[string]redislocks.SeenPod
}

// remembered returns the pods of view where seen by earlier lists since
// now - ttl, from the reaper's memory and from Redis; a Redis that cannot be
// read leaves the memory alone (fewer sightings: fewer absences count).
func (r *Reaper) rememberedPods(ctx context.Context, where string, now time.Time) map[string]heartbeat.SeenPod {
	stored, err := redislocks.ReadSeenPods(ctx, r.rdb, r.cfg.RedisTimeout)
	if err != nil {
		r.log.Warn("pods seen by earlier passes unreadable, judging with this reaper's memory", slog.String("error", err.Error()))
	}
	m := &r.pods
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.byName == nil {
		m.byName = map[string]redislocks.SeenPod{}
	}
	for name, p := range stored {
		if old, ok := m.byName[name]; !ok || p.Seen.After(old.Seen) {
			m.byName[name] = p
		}
	}
	out := map[string]heartbeat.SeenPod{}
	for name, p := range m.byName {
		switch {
		case now.Sub(p.Seen) > r.cfg.SuspectTTL:
			delete(m.byName, name)
		case p.Where == where:
			out[name] = p.SeenPod
		}
	}
	return out
}

// rememberPods adds the pods of one complete list of view where to the
// memory and, unless dryRun, writes the memory to Redis.
func (r *Reaper) rememberPods(ctx context.Context, where string, pods []heartbeat.Pod, now time.Time, dryRun bool) {
	m := &r.pods
	m.mu.Lock()
	for _, p := range pods {
		m.byName[p.Name] = redislocks.SeenPod{SeenPod: heartbeat.SeenPod{UID: p.UID, Seen: now}, Where: where}
	}
	snapshot := make(map[string]redislocks.SeenPod, len(m.byName))
	for k, v := range m.byName {
		snapshot[k] = v
	}
	m.mu.Unlock()
	if dryRun {
		return
	}
	if err := redislocks.WriteSeenPods(ctx, r.rdb, r.cfg.RedisTimeout, r.cfg.SuspectTTL, snapshot); err != nil {
		r.log.Warn("pods seen not remembered in Redis", slog.String("error", err.Error()))
	}
}
