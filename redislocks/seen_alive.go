package redislocks

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lock-reaper/lock-reaper/judge"
)

// The mass-death guard's memory lives in Redis beside the suspects, in one
// hash under SeenAliveKey with the suspects' expiry (suspect_ttl): a field is
// a worker row's pulp_id, a value the JSON object of judge.SeenAlive. Every
// pass that writes rewrites it, so it expires only when passes stop for
// longer than suspect_ttl.

// ReadSeenAlive loads the worker rows earlier passes saw alive. Entries that
// do not decode are dropped, and a key of another type reads as empty: a
// forgotten row makes the guard no stricter than its window rule.
func ReadSeenAlive(ctx context.Context, rdb redis.UniversalClient, timeout time.Duration) (map[string]judge.SeenAlive, error) {
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	raw, err := rdb.HGetAll(cctx, SeenAliveKey).Result()
	if isWrongType(err) {
		return map[string]judge.SeenAlive{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the mass-death guard's memory %s from Redis: %w", SeenAliveKey, err)
	}
	out := make(map[string]judge.SeenAlive, len(raw))
	for id, v := range raw {
		var s judge.SeenAlive
		if json.Unmarshal([]byte(v), &s) == nil && !s.At.IsZero() {
			out[id] = s
		}
	}
	return out, nil
}

// WriteSeenAlive replaces the guard's memory atomically.
func WriteSeenAlive(ctx context.Context, rdb redis.UniversalClient, timeout, ttl time.Duration, seen map[string]judge.SeenAlive) error {
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	_, err := rdb.TxPipelined(cctx, func(p redis.Pipeliner) error {
		p.Del(cctx, SeenAliveKey)
		if len(seen) == 0 {
			return nil
		}
		fields := make([]any, 0, 2*len(seen))
		for id, s := range seen {
			v, _ := json.Marshal(s)
			fields = append(fields, id, string(v))
		}
		p.HSet(cctx, SeenAliveKey, fields...)
		p.Expire(cctx, SeenAliveKey, ttl)
		return nil
	})
	if err != nil {
		return fmt.Errorf("write the mass-death guard's memory %s to Redis: %w", SeenAliveKey, err)
	}
	return nil
}
