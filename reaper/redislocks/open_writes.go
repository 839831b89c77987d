package redislocks

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lock-reaper/lock-reaper/reaper/judge"
)

// The first sightings of other sessions' uncommitted writes to core_task
// live in Redis beside the suspects, in one hash under OpenWritesKey with
// the suspects' expiry (suspect_ttl): a field is "<pid>:<virtualtransaction>",
// a value the JSON object of openWriteValue. They bound the hold such a write
// puts on shared memberships when the reaper's role may not see the
// transaction's age (no pg_read_all_stats), across CronJob runs and replicas
// as within a daemon. A pass that looked rewrites it with what it saw.

// openWriteValue is a first sighting as stored: {"first_seen": ...}.
type openWriteValue struct {
	FirstSeen time.Time `json:"first_seen"`
}

// OpenWriteField is the field of w in the hash.
func OpenWriteField(w judge.OpenWrite) string {
	return strconv.FormatInt(int64(w.PID), 10) + ":" + w.Transaction
}

// ReadOpenWrites loads the first sightings, by OpenWriteField. Entries that
// do not decode are dropped, and a key of another type reads as empty: a
// forgotten sighting only makes the hold last longer.
func ReadOpenWrites(ctx context.Context, rdb redis.UniversalClient, timeout time.Duration) (map[string]time.Time, error) {
	stored, err := readJSONHash(ctx, rdb, timeout, OpenWritesKey, func(v openWriteValue) bool { return !v.FirstSeen.IsZero() })
	if err != nil {
		return nil, fmt.Errorf("read the uncommitted writes to core_task seen by earlier passes, %s, from Redis: %w", OpenWritesKey, err)
	}
	out := make(map[string]time.Time, len(stored))
	for f, v := range stored {
		out[f] = v.FirstSeen
	}
	return out, nil
}

// WriteOpenWrites replaces the first sightings atomically; none leaves no key.
func WriteOpenWrites(ctx context.Context, rdb redis.UniversalClient, timeout, ttl time.Duration, seen map[string]time.Time) error {
	stored := make(map[string]openWriteValue, len(seen))
	for f, at := range seen {
		stored[f] = openWriteValue{FirstSeen: at}
	}
	if err := writeJSONHash(ctx, rdb, timeout, ttl, OpenWritesKey, stored); err != nil {
		return fmt.Errorf("write the uncommitted writes to core_task seen, %s, to Redis: %w", OpenWritesKey, err)
	}
	return nil
}
