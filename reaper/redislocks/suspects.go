package redislocks

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/lock-reaper/lock-reaper/reaper/judge"
	"github.com/redis/go-redis/v9"
)

// Suspects live in Redis, in one hash under SuspectsKey with an expiry, so
// they carry over between CronJob runs and reaper replicas. A field is the
// JSON array [key, owner]; a value is the JSON object of suspectValue.

func encodeSuspectField(k judge.SuspectKey) string {
	b, _ := json.Marshal([2]string{k.Key, k.Owner})
	return string(b)
}

// suspectValue is a judge.Suspect as stored: {"verdict": ..., "first_seen": ...}.
type suspectValue struct {
	Verdict   judge.Verdict `json:"verdict"`
	FirstSeen time.Time     `json:"first_seen"`
}

// ReadSuspects loads the suspects remembered by earlier passes. Entries that
// do not decode are dropped: a suspect that is forgotten only delays a
// release, it never causes one.
func ReadSuspects(ctx context.Context, rdb redis.UniversalClient, timeout time.Duration) (map[judge.SuspectKey]judge.Suspect, error) {
	stored, err := readJSONHash(ctx, rdb, timeout, SuspectsKey, func(s suspectValue) bool { return s.Verdict != 0 && !s.FirstSeen.IsZero() })
	if err != nil {
		return nil, fmt.Errorf("read suspects: %w", err)
	}
	out := make(map[judge.SuspectKey]judge.Suspect, len(stored))
	for field, s := range stored {
		var kv [2]string
		if json.Unmarshal([]byte(field), &kv) == nil {
			out[judge.SuspectKey{Key: kv[0], Owner: kv[1]}] = judge.Suspect(s)
		}
	}
	return out, nil
}

// WriteSuspects replaces the remembered suspects atomically.
func WriteSuspects(ctx context.Context, rdb redis.UniversalClient, timeout, ttl time.Duration, suspects map[judge.SuspectKey]judge.Suspect) error {
	stored := make(map[string]suspectValue, len(suspects))
	for k, s := range suspects {
		stored[encodeSuspectField(k)] = suspectValue(s)
	}
	if err := writeJSONHash(ctx, rdb, timeout, ttl, SuspectsKey, stored); err != nil {
		return fmt.Errorf("write suspects: %w", err)
	}
	return nil
}
