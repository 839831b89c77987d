package sim

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/redis/go-redis/v9"
)

// HoldingKind is the kind of lock a holding is.
type HoldingKind string

const (
	// KindTask is a task:<uuid> string lock.
	KindTask HoldingKind = "task"
	// KindExclusive is a pulp:resource_lock:<R> string lock.
	KindExclusive HoldingKind = "exclusive"
	// KindShared is one member of a pulp:resource_lock:<R> set.
	KindShared HoldingKind = "shared"
)

// Holding is one (lock key, owner) pair: a task or exclusive key gives one, a
// shared set one per member.
type Holding struct {
	Key   string
	Owner string
	Kind  HoldingKind
	// Registered says whether pulp:owner_locks:<Owner> lists Key.
	Registered bool
}

// TaskID is the task of a task lock, or "".
func (h Holding) TaskID() string {
	id, _ := parseTaskKey(h.Key)
	return id
}

// Resource is the resource of a resource holding, or "".
func (h Holding) Resource() string {
	if h.Kind == KindTask {
		return ""
	}
	r, _ := strings.CutPrefix(h.Key, ResourceKeyPrefix)
	return r
}

// Count returns how many of hs are held by owner with one of kinds (any kind
// if none given).
func Count(hs []Holding, owner string, kinds ...HoldingKind) int {
	n := 0
	for _, h := range hs {
		if h.Owner != owner {
			continue
		}
		if len(kinds) == 0 {
			n++
			continue
		}
		for _, k := range kinds {
			if h.Kind == k {
				n++
				break
			}
		}
	}
	return n
}

const scanCount = 1000

// ScanHoldings reads every Pulp lock holding in Redis with a keyspace SCAN of
// task:* and pulp:resource_lock:*, so legacy locks are found too, and marks
// which ones the owner registry lists. Keys under those prefixes that are not
// Pulp locks (a task key that is no UUID, a key of another type) are skipped.
// The result is sorted by key, then owner.
func ScanHoldings(ctx context.Context, rdb redis.UniversalClient) ([]Holding, error) {
	var hs []Holding
	for _, pattern := range []string{TaskKeyPrefix + "*", ResourceKeyPrefix + "*"} {
		iter := rdb.Scan(ctx, 0, pattern, scanCount).Iterator()
		var batch []string
		for iter.Next(ctx) {
			batch = append(batch, iter.Val())
			if len(batch) == scanCount {
				got, err := readHoldings(ctx, rdb, batch)
				if err != nil {
					return nil, err
				}
				hs, batch = append(hs, got...), batch[:0]
			}
		}
		if err := iter.Err(); err != nil {
			return nil, fmt.Errorf("scan %s: %w", pattern, err)
		}
		got, err := readHoldings(ctx, rdb, batch)
		if err != nil {
			return nil, err
		}
		hs = append(hs, got...)
	}
	if err := markRegistered(ctx, rdb, hs); err != nil {
		return nil, err
	}
	sort.Slice(hs, func(i, j int) bool {
		if hs[i].Key != hs[j].Key {
			return hs[i].Key < hs[j].Key
		}
		return hs[i].Owner < hs[j].Owner
	})
	return hs, nil
}

// readHoldings reads the values of a batch of lock keys in two pipelined
// round trips: types, then values.
func readHoldings(ctx context.Context, rdb redis.UniversalClient, keys []string) ([]Holding, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	pipe := rdb.Pipeline()
	types := make([]*redis.StatusCmd, len(keys))
	for i, k := range keys {
		types[i] = pipe.Type(ctx, k)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, fmt.Errorf("read lock types: %w", err)
	}
	pipe = rdb.Pipeline()
	strs := map[string]*redis.StringCmd{}
	sets := map[string]*redis.StringSliceCmd{}
	for i, k := range keys {
		isTask := strings.HasPrefix(k, TaskKeyPrefix)
		if _, ok := parseTaskKey(k); isTask && !ok {
			continue // a cache key that only looks like a task lock
		}
		switch types[i].Val() {
		case "string":
			strs[k] = pipe.Get(ctx, k)
		case "set":
			if !isTask {
				sets[k] = pipe.SMembers(ctx, k)
			}
		}
	}
	// A key may vanish or change type between the two round trips: such a
	// key is skipped, only a failed round trip is an error.
	_, _ = pipe.Exec(ctx)
	var hs []Holding
	for k, cmd := range strs {
		if err := cmd.Err(); err != nil {
			if !gone(err) {
				return nil, fmt.Errorf("read lock %s: %w", k, err)
			}
			continue
		}
		kind := KindExclusive
		if strings.HasPrefix(k, TaskKeyPrefix) {
			kind = KindTask
		}
		hs = append(hs, Holding{Key: k, Owner: cmd.Val(), Kind: kind})
	}
	for k, cmd := range sets {
		if err := cmd.Err(); err != nil && !gone(err) {
			return nil, fmt.Errorf("read lock %s: %w", k, err)
		}
		for _, o := range cmd.Val() {
			hs = append(hs, Holding{Key: k, Owner: o, Kind: KindShared})
		}
	}
	return hs, nil
}

// gone reports whether a per-command error only says the key vanished or
// changed type since it was seen.
func gone(err error) bool {
	return errors.Is(err, redis.Nil) || redis.HasErrorPrefix(err, "WRONGTYPE")
}

// markRegistered sets Registered on holdings listed in their owner's registry.
func markRegistered(ctx context.Context, rdb redis.UniversalClient, hs []Holding) error {
	owners := map[string]*redis.StringSliceCmd{}
	pipe := rdb.Pipeline()
	for _, h := range hs {
		if _, ok := owners[h.Owner]; !ok {
			owners[h.Owner] = pipe.SMembers(ctx, OwnerLocksKey(h.Owner))
		}
	}
	if len(owners) == 0 {
		return nil
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("read owner registries: %w", err)
	}
	registered := map[holdingRef]bool{}
	for o, cmd := range owners {
		for _, k := range cmd.Val() {
			registered[holdingRef{o, k}] = true
		}
	}
	for i := range hs {
		hs[i].Registered = registered[holdingRef{hs[i].Owner, hs[i].Key}]
	}
	return nil
}
