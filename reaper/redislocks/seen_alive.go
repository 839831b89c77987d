package redislocks

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lock-reaper/lock-reaper/reaper/judge"
)

// The mass-death guard's memory lives in Redis beside the suspects, in one
// hash under SeenAliveKey with the suspects' expiry (suspect_ttl): a field is
// a worker row's pulp_id, a value the JSON object of seenAliveValue. Every
// pass that writes rewrites it, so it expires only when passes stop for
// longer than suspect_ttl.

// seenAliveValue is a judge.SeenAlive as stored: {"name": ..., "at": ...}.
type seenAliveValue struct {
	Name string    `json:"name"`
	At   time.Time `json:"at"`
}

// ReadSeenAlive loads the worker rows earlier passes saw alive. Entries that
// do not decode are dropped, and a key of another type reads as empty: a
// forgotten row makes the guard no stricter than its window rule.
func ReadSeenAlive(ctx context.Context, rdb redis.UniversalClient, timeout time.Duration) (map[string]judge.SeenAlive, error) {
	stored, err := readJSONHash(ctx, rdb, timeout, SeenAliveKey, func(s seenAliveValue) bool { return !s.At.IsZero() })
	if err != nil {
		return nil, fmt.Errorf("read the mass-death guard's memory %s from Redis: %w", SeenAliveKey, err)
	}
	out := make(map[string]judge.SeenAlive, len(stored))
	for id, s := range stored {
		out[id] = judge.SeenAlive(s)
	}
	return out, nil
}

// WriteSeenAlive replaces the guard's memory atomically.
func WriteSeenAlive(ctx context.Context, rdb redis.UniversalClient, timeout, ttl time.Duration, seen map[string]judge.SeenAlive) error {
	stored := make(map[string]seenAliveValue, len(seen))
	for id, s := range seen {
		stored[id] = seenAliveValue(s)
	}
	if err := writeJSONHash(ctx, rdb, timeout, ttl, SeenAliveKey, stored); err != nil {
		return fmt.Errorf("write the mass-death guard's memory %s to Redis: %w", SeenAliveKey, err)
	}
	return nil
}
