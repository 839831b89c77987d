package reaper

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// ScanMatch narrows the keyspace walk to keys that can be Pulp locks (task:*
// and pulp:*) with one SCAN instead of one per prefix; the exact prefixes are
// checked on this side. The benchmark's baseline walks with the same pattern.
const ScanMatch = "[tp]*"

// redisReader reads every Pulp lock holding from Redis.
type redisReader struct {
	rdb       redis.UniversalClient
	scanCount int
	batchSize int
	timeout   time.Duration
	// progress, when set, is told how many keys have been looked at.
	progress func(keys int)
}

// redisSnapshot is what one read of Redis found.
type redisSnapshot struct {
	holdings []Holding
	ignored  []Ignored
	keys     int
}

// read collects candidate keys from the owner registry and, on a full scan,
// from a keyspace SCAN that also finds legacy (unregistered) locks, then
// reads their types and values in pipelined batches.
func (rr *redisReader) read(ctx context.Context, fullScan bool) (redisSnapshot, error) {
	registered, err := rr.readRegistry(ctx)
	if err != nil {
		return redisSnapshot{}, err
	}
	candidates := make(map[string]struct{}, len(registered))
	for key := range registered {
		candidates[key] = struct{}{}
	}
	if fullScan {
		if err := rr.scan(ctx, candidates); err != nil {
			return redisSnapshot{}, err
		}
	}
	keys := make([]string, 0, len(candidates))
	for k := range candidates {
		keys = append(keys, k)
	}
	sort.Strings(keys)

	snap := redisSnapshot{keys: len(keys)}
	for start := 0; start < len(keys); start += rr.batchSize {
		batch := keys[start:min(start+rr.batchSize, len(keys))]
		if err := rr.readBatch(ctx, batch, registered, &snap); err != nil {
			return redisSnapshot{}, err
		}
		if rr.progress != nil {
			rr.progress(start + len(batch))
		}
	}
	return snap, nil
}

// readRegistry returns, for every lock key in the owner registry, the owners
// that registered it.
func (rr *redisReader) readRegistry(ctx context.Context) (map[string]map[string]bool, error) {
	cctx, cancel := context.WithTimeout(ctx, rr.timeout)
	owners, err := rr.rdb.SMembers(cctx, ActiveOwnersKey).Result()
	cancel()
	if err != nil && !isWrongType(err) {
		return nil, fmt.Errorf("read %s: %w", ActiveOwnersKey, err)
	}
	sort.Strings(owners)
	registered := map[string]map[string]bool{}
	for start := 0; start < len(owners); start += rr.batchSize {
		batch := owners[start:min(start+rr.batchSize, len(owners))]
		cctx, cancel := context.WithTimeout(ctx, rr.timeout)
		pipe := rr.rdb.Pipeline()
		cmds := make([]*redis.StringSliceCmd, len(batch))
		for i, o := range batch {
			cmds[i] = pipe.SMembers(cctx, OwnerLocksPrefix+o)
		}
		_, err := pipe.Exec(cctx)
		cancel()
		if err != nil && !isWrongType(err) {
			return nil, fmt.Errorf("read owner registry: %w", err)
		}
		for i, o := range batch {
			keys, err := cmds[i].Result()
			if err != nil {
				// A registry of the wrong type is not ours to judge; the
				// full scan still finds the locks themselves.
				continue
			}
			for _, k := range keys {
				if !isLockKeyName(k) {
					continue
				}
				if registered[k] == nil {
					registered[k] = map[string]bool{}
				}
				registered[k][o] = true
			}
		}
	}
	return registered, nil
}

func isLockKeyName(k string) bool {
	return strings.HasPrefix(k, TaskKeyPrefix) || strings.HasPrefix(k, ResourceKeyPrefix)
}

// scan walks the keyspace once and adds every key under a lock prefix.
func (rr *redisReader) scan(ctx context.Context, into map[string]struct{}) error {
	var cursor uint64
	for {
		cctx, cancel := context.WithTimeout(ctx, rr.timeout)
		keys, next, err := rr.rdb.Scan(cctx, cursor, ScanMatch, int64(rr.scanCount)).Result()
		cancel()
		if err != nil {
			return fmt.Errorf("scan keyspace: %w", err)
		}
		for _, k := range keys {
			if isLockKeyName(k) {
				into[k] = struct{}{}
			}
		}
		if next == 0 {
			return nil
		}
		cursor = next
	}
}

// readBatch reads the type and value of each key in one round trip, and the
// members of the sets among them in a second one.
func (rr *redisReader) readBatch(ctx context.Context, keys []string, registered map[string]map[string]bool, snap *redisSnapshot) error {
	cctx, cancel := context.WithTimeout(ctx, rr.timeout)
	defer cancel()
	pipe := rr.rdb.Pipeline()
	types := make([]*redis.StatusCmd, len(keys))
	values := make([]*redis.StringCmd, len(keys))
	for i, k := range keys {
		types[i] = pipe.Type(cctx, k)
		values[i] = pipe.Get(cctx, k)
	}
	if _, err := pipe.Exec(cctx); err != nil && !isWrongType(err) && !errors.Is(err, redis.Nil) {
		return fmt.Errorf("read lock keys: %w", err)
	}
	var sets []string
	for i, k := range keys {
		typ, err := types[i].Result()
		if err != nil {
			return fmt.Errorf("read type of %q: %w", k, err)
		}
		switch typ {
		case "none":
			// Released between the scan and this read.
		case "string":
			v, err := values[i].Result()
			if errors.Is(err, redis.Nil) {
				continue
			}
			if err != nil {
				return fmt.Errorf("read %q: %w", k, err)
			}
			snap.addString(k, v, registered[k])
		case "set":
			if _, ok := ParseResourceKey(k); ok {
				sets = append(sets, k)
				continue
			}
			snap.ignore(k, typ, "task lock is a set; a task lock is a string")
		default:
			snap.ignore(k, typ, "lock key of type "+typ+"; Pulp writes strings and sets")
		}
	}
	return rr.readSets(ctx, sets, registered, snap)
}

func (rr *redisReader) readSets(ctx context.Context, keys []string, registered map[string]map[string]bool, snap *redisSnapshot) error {
	if len(keys) == 0 {
		return nil
	}
	cctx, cancel := context.WithTimeout(ctx, rr.timeout)
	defer cancel()
	pipe := rr.rdb.Pipeline()
	members := make([]*redis.StringSliceCmd, len(keys))
	for i, k := range keys {
		members[i] = pipe.SMembers(cctx, k)
	}
	if _, err := pipe.Exec(cctx); err != nil && !isWrongType(err) {
		return fmt.Errorf("read shared locks: %w", err)
	}
	for i, k := range keys {
		ms, err := members[i].Result()
		if isWrongType(err) {
			// Became a string since its type was read; the next pass sees it.
			continue
		}
		if err != nil {
			return fmt.Errorf("read members of %q: %w", k, err)
		}
		resource, _ := ParseResourceKey(k)
		sort.Strings(ms)
		for _, m := range ms {
			if problem := OwnerProblem(m); problem != "" {
				snap.ignore(k, "set", "member "+quoteShort(m)+": "+problem)
				continue
			}
			snap.holdings = append(snap.holdings, Holding{Key: k, Kind: KindShared, Owner: m, Resource: resource, Registered: registered[k][m]})
		}
	}
	return nil
}

func (s *redisSnapshot) addString(key, value string, registeredBy map[string]bool) {
	if problem := OwnerProblem(value); problem != "" {
		s.ignore(key, "string", "value "+quoteShort(value)+": "+problem)
		return
	}
	if id, ok := ParseTaskKey(key); ok {
		s.holdings = append(s.holdings, Holding{Key: key, Kind: KindTask, Owner: value, TaskID: id, Registered: registeredBy[value]})
		return
	}
	if strings.HasPrefix(key, TaskKeyPrefix) {
		s.ignore(key, "string", "task key without a canonical lowercase task UUID")
		return
	}
	if resource, ok := ParseResourceKey(key); ok {
		s.holdings = append(s.holdings, Holding{Key: key, Kind: KindExclusive, Owner: value, Resource: resource, Registered: registeredBy[value]})
		return
	}
	s.ignore(key, "string", "resource lock key without a resource name")
}

func (s *redisSnapshot) ignore(key, typ, reason string) {
	s.ignored = append(s.ignored, Ignored{Key: key, Type: typ, Reason: reason})
}

// quoteShort quotes a value for a report, cut to a readable length.
func quoteShort(v string) string {
	const max = 64
	if len(v) > max {
		return fmt.Sprintf("%q… (%d bytes)", v[:max], len(v))
	}
	return fmt.Sprintf("%q", v)
}

func isWrongType(err error) bool {
	return err != nil && strings.HasPrefix(err.Error(), "WRONGTYPE")
}
