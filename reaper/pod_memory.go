package reaper

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/lock-reaper/lock-reaper/judge"
	"github.com/redis/go-redis/v9"
)

// The pods earlier complete lists showed, by name: a pod's absence proves a
// death only for a pod the reaper has seen (docs/verdicts.md). A long-running
// reaper keeps them in memory; every pass that writes also keeps them in
// Redis, in one hash under PodsSeenKey with an expiry (the suspects' ttl), so
// that one-shot runs (the CronJob) and other replicas know them. A field is
// the pod's name; a value the JSON object of seenPod.

// seenPod is one remembered pod, with the namespace and selector of the list
// that showed it: a list of another view says nothing of it.
type seenPod struct {
	judge.SeenPod

	Where string `json:"where"`
}

// podMemory is the reaper's own memory of the pods it has seen, by view.
type podMemory struct {
	mu     sync.Mutex
	byName map[string]seenPod
}

// remembered returns the pods of view where seen by earlier lists since
// now - ttl, from the reaper's memory and from Redis; a Redis that cannot be
// read leaves the memory alone (fewer sightings: fewer absences count).
func (r *Reaper) rememberedPods(ctx context.Context, where string, now time.Time) map[string]judge.SeenPod {
	stored, err := readSeenPods(ctx, r.rdb, r.cfg.RedisTimeout)
	if err != nil {
		r.log.Warn("pods seen by earlier passes unreadable, judging with this reaper's memory", slog.String("error", err.Error()))
	}
	m := &r.pods
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.byName == nil {
		m.byName = map[string]seenPod{}
	}
	for name, p := range stored {
		if old, ok := m.byName[name]; !ok || p.Seen.After(old.Seen) {
			m.byName[name] = p
		}
	}
	out := map[string]judge.SeenPod{}
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
func (r *Reaper) rememberPods(ctx context.Context, where string, pods []judge.Pod, now time.Time, dryRun bool) {
	m := &r.pods
	m.mu.Lock()
	for _, p := range pods {
		m.byName[p.Name] = seenPod{SeenPod: judge.SeenPod{UID: p.UID, Seen: now}, Where: where}
	}
	snapshot := make(map[string]seenPod, len(m.byName))
	for k, v := range m.byName {
		snapshot[k] = v
	}
	m.mu.Unlock()
	if dryRun {
		return
	}
	if err := writeSeenPods(ctx, r.rdb, r.cfg.RedisTimeout, r.cfg.SuspectTTL, snapshot); err != nil {
		r.log.Warn("pods seen not remembered in Redis", slog.String("error", err.Error()))
	}
}

// readSeenPods loads the pods remembered in Redis. Entries that do not
// decode are dropped: a pod forgotten only makes its absence count for less.
func readSeenPods(ctx context.Context, rdb redis.UniversalClient, timeout time.Duration) (map[string]seenPod, error) {
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	raw, err := rdb.HGetAll(cctx, PodsSeenKey).Result()
	if isWrongType(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", PodsSeenKey, err)
	}
	out := make(map[string]seenPod, len(raw))
	for name, v := range raw {
		var p seenPod
		if json.Unmarshal([]byte(v), &p) == nil && !p.Seen.IsZero() && p.Where != "" {
			out[name] = p
		}
	}
	return out, nil
}

// writeSeenPods replaces the remembered pods atomically, with the same
// commands as the suspects (the reaper's Redis ACL has no others).
func writeSeenPods(ctx context.Context, rdb redis.UniversalClient, timeout, ttl time.Duration, pods map[string]seenPod) error {
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	_, err := rdb.TxPipelined(cctx, func(p redis.Pipeliner) error {
		p.Del(cctx, PodsSeenKey)
		if len(pods) == 0 {
			return nil
		}
		fields := make([]any, 0, 2*len(pods))
		for name, s := range pods {
			v, _ := json.Marshal(s)
			fields = append(fields, name, string(v))
		}
		p.HSet(cctx, PodsSeenKey, fields...)
		p.Expire(cctx, PodsSeenKey, ttl)
		return nil
	})
	if err != nil {
		return fmt.Errorf("write %s: %w", PodsSeenKey, err)
	}
	return nil
}
