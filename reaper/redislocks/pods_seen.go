package redislocks

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/lock-reaper/lock-reaper/heartbeat"
	"github.com/redis/go-redis/v9"
)

// The pods earlier complete lists showed, by name: a pod's absence proves a
// death only for a pod the reaper has seen (docs/verdicts.md). Every pass
// that writes keeps them in Redis, in one hash under PodsSeenKey with an
// expiry (the suspects' ttl), so that one-shot runs (the CronJob) and other
// replicas know them. A field is
// the pod's name; a value the JSON object of SeenPod.

// SeenPod is one remembered pod, with the namespace and selector of the list
// that showed it: a list of another view says nothing of it.
type SeenPod struct {
	heartbeat.SeenPod

	Where string
}

// seenPodValue is a SeenPod as stored: {"uid": ..., "seen": ..., "where": ...}.
type seenPodValue struct {
	UID   string    `json:"uid"`
	Seen  time.Time `json:"seen"`
	Where string    `json:"where"`
}

// MarshalJSON writes the stored form.
func (p SeenPod) MarshalJSON() ([]byte, error) {
	return json.Marshal(seenPodValue{UID: p.UID, Seen: p.Seen, Where: p.Where})
}

// UnmarshalJSON reads the stored form.
func (p *SeenPod) UnmarshalJSON(b []byte) error {
	var v seenPodValue
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*p = SeenPod{SeenPod: heartbeat.SeenPod{UID: v.UID, Seen: v.Seen}, Where: v.Where}
	return nil
}

// ReadSeenPods loads the pods remembered in Redis. Entries that do not
// decode are dropped: a pod forgotten only makes its absence count for less.
func ReadSeenPods(ctx context.Context, rdb redis.UniversalClient, timeout time.Duration) (map[string]SeenPod, error) {
	out, err := readJSONHash(ctx, rdb, timeout, PodsSeenKey, func(p SeenPod) bool { return !p.Seen.IsZero() && p.Where != "" })
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", PodsSeenKey, err)
	}
	return out, nil
}

// WriteSeenPods replaces the remembered pods atomically.
func WriteSeenPods(ctx context.Context, rdb redis.UniversalClient, timeout, ttl time.Duration, pods map[string]SeenPod) error {
	if err := writeJSONHash(ctx, rdb, timeout, ttl, PodsSeenKey, pods); err != nil {
		return fmt.Errorf("write %s: %w", PodsSeenKey, err)
	}
	return nil
}
