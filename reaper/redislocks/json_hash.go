package redislocks

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// lock-reaper's memories in Redis (the suspects, the mass-death guard's
// rows seen alive, the pods seen) are each one hash of JSON values with an
// expiry (suspect_ttl), rewritten whole by every pass that writes.

// readJSONHash loads the hash at key, keeping the values that decode and
// that keep accepts. A key of another type reads as empty: a forgotten entry
// only makes the reaper more careful.
func readJSONHash[T any](ctx context.Context, rdb redis.UniversalClient, timeout time.Duration, key string, keep func(T) bool) (map[string]T, error) {
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	raw, err := rdb.HGetAll(cctx, key).Result()
	if isWrongType(err) {
		return map[string]T{}, nil
	}
	if err != nil {
		return nil, err
	}
	out := make(map[string]T, len(raw))
	for field, v := range raw {
		var t T
		if json.Unmarshal([]byte(v), &t) == nil && keep(t) {
			out[field] = t
		}
	}
	return out, nil
}

// writeJSONHash replaces the hash at key atomically with m, expiring after
// ttl; an empty m leaves no key.
func writeJSONHash[T any](ctx context.Context, rdb redis.UniversalClient, timeout, ttl time.Duration, key string, m map[string]T) error {
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmds, err := rdb.TxPipelined(cctx, func(p redis.Pipeliner) error {
		p.Del(cctx, key)
		if len(m) == 0 {
			return nil
		}
		fields := make([]any, 0, 2*len(m))
		for field, t := range m {
			v, err := json.Marshal(t)
			if err != nil {
				return err
			}
			fields = append(fields, field, string(v))
		}
		p.HSet(cctx, key, fields...)
		p.Expire(cctx, key, ttl)
		return nil
	})
	return refusedIn(cmds, err)
}

// refusedIn names the command a MULTI refused: Redis answers EXEC with
// EXECABORT alone, and the command's own error (NOPERM …) says which.
func refusedIn(cmds []redis.Cmder, err error) error {
	if err == nil || !strings.HasPrefix(err.Error(), "EXECABORT") {
		return err
	}
	for _, c := range cmds {
		if cerr := c.Err(); cerr != nil && !strings.HasPrefix(cerr.Error(), "EXECABORT") {
			return fmt.Errorf("%s refused: %w", strings.ToUpper(c.Name()), cerr)
		}
	}
	return err
}
