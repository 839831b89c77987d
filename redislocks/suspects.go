package redislocks

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/lock-reaper/lock-reaper/judge"
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

func encodeSuspectValue(s judge.Suspect) string {
	b, _ := json.Marshal(suspectValue(s))
	return string(b)
}

func decodeSuspect(field, value string) (judge.SuspectKey, judge.Suspect, bool) {
	var kv [2]string
	var s suspectValue
	if json.Unmarshal([]byte(field), &kv) != nil || json.Unmarshal([]byte(value), &s) != nil {
		return judge.SuspectKey{}, judge.Suspect{}, false
	}
	if s.Verdict == 0 || s.FirstSeen.IsZero() {
		return judge.SuspectKey{}, judge.Suspect{}, false
	}
	return judge.SuspectKey{Key: kv[0], Owner: kv[1]}, judge.Suspect(s), true
}

// ReadSuspects loads the suspects remembered by earlier passes. Entries that
// do not decode are dropped: a suspect that is forgotten only delays a
// release, it never causes one.
func ReadSuspects(ctx context.Context, rdb redis.UniversalClient, timeout time.Duration) (map[judge.SuspectKey]judge.Suspect, error) {
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	raw, err := rdb.HGetAll(cctx, SuspectsKey).Result()
	if isWrongType(err) {
		return map[judge.SuspectKey]judge.Suspect{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read suspects: %w", err)
	}
	out := make(map[judge.SuspectKey]judge.Suspect, len(raw))
	for f, v := range raw {
		if k, s, ok := decodeSuspect(f, v); ok {
			out[k] = s
		}
	}
	return out, nil
}

// WriteSuspects replaces the remembered suspects atomically.
func WriteSuspects(ctx context.Context, rdb redis.UniversalClient, timeout, ttl time.Duration, suspects map[judge.SuspectKey]judge.Suspect) error {
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	_, err := rdb.TxPipelined(cctx, func(p redis.Pipeliner) error {
		p.Del(cctx, SuspectsKey)
		if len(suspects) == 0 {
			return nil
		}
		fields := make([]any, 0, 2*len(suspects))
		for k, s := range suspects {
			fields = append(fields, encodeSuspectField(k), encodeSuspectValue(s))
		}
		p.HSet(cctx, SuspectsKey, fields...)
		p.Expire(cctx, SuspectsKey, ttl)
		return nil
	})
	if err != nil {
		return fmt.Errorf("write suspects: %w", err)
	}
	return nil
}
