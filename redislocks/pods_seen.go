package redislocks

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lock-reaper/lock-reaper/judge"
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
	judge.SeenPod

	Where string `json:"where"`
}

// ReadSeenPods loads the pods remembered in Redis. Entries that do not
// decode are dropped: a pod forgotten only makes its absence count for less.
func ReadSeenPods(ctx context.Context, rdb redis.UniversalClient, timeout time.Duration) (map[string]SeenPod, error) {
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	raw, err := rdb.HGetAll(cctx, PodsSeenKey).Result()
	if isWrongType(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", PodsSeenKey, err)
	}
	out := make(map[string]SeenPod, len(raw))
	for name, v := range raw {
		var p SeenPod
		if json.Unmarshal([]byte(v), &p) == nil && !p.Seen.IsZero() && p.Where != "" {
			out[name] = p
		}
	}
	return out, nil
}

// WriteSeenPods replaces the remembered pods atomically, with the same
// commands as the suspects (the reaper's Redis ACL has no others).
func WriteSeenPods(ctx context.Context, rdb redis.UniversalClient, timeout, ttl time.Duration, pods map[string]SeenPod) error {
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
