package redislocks

import (
	"context"
	"fmt"
	"sort"

	"github.com/redis/go-redis/v9"
)

// ownerRegistry is what pulp:owner_locks:* say: which owners registered
// which lock keys. Nearly every key has one owner, so the first is kept in a
// flat map and only the further owners of a shared key in a second one.
type ownerRegistry struct {
	first map[string]string
	more  map[registration]struct{}
	// owners interns owner names: a lock's value is usually one of them.
	owners map[string]string
}

type registration struct{ key, owner string }

func newOwnerRegistry(owners []string, keys int) *ownerRegistry {
	r := &ownerRegistry{first: make(map[string]string, keys), more: map[registration]struct{}{}, owners: make(map[string]string, len(owners))}
	for _, o := range owners {
		r.owners[o] = o
	}
	return r
}

func (r *ownerRegistry) add(key, owner string) {
	first, ok := r.first[key]
	switch {
	case !ok:
		r.first[key] = owner
	case first != owner:
		r.more[registration{key, owner}] = struct{}{}
	}
}

// registered says whether owner registered key.
func (r *ownerRegistry) registered(key, owner string) bool {
	first, ok := r.first[key]
	if !ok || first == owner {
		return ok
	}
	_, ok = r.more[registration{key, owner}]
	return ok
}

// has says whether any owner registered key.
func (r *ownerRegistry) has(key string) bool {
	_, ok := r.first[key]
	return ok
}

// size is the number of (key, owner) registrations: the holdings a pass
// finds when every lock is registered.
func (r *ownerRegistry) size() int { return len(r.first) + len(r.more) }

func (r *ownerRegistry) lockKeys() []string {
	keys := make([]string, 0, len(r.first))
	for k := range r.first {
		keys = append(keys, k)
	}
	return keys
}

// intern returns the registry's copy of an owner name, so that the holdings
// of one owner share one string.
func (r *ownerRegistry) intern(owner string) string {
	if o, ok := r.owners[owner]; ok {
		return o
	}
	return owner
}

// readRegistry reads, for every lock key in the owner registry, the owners
// that registered it. Every set is read with SSCAN, a page per command, so
// that no command of the read blocks Redis long however large a registry
// (or pulp:active_owners) is; the first page of each registry of a batch is
// asked in one pipeline, and only a registry longer than a page costs more
// round trips.
func (rr *Reader) readRegistry(ctx context.Context) (*ownerRegistry, error) {
	owners, err := rr.readSet(ctx, ActiveOwnersKey)
	if err != nil && !isWrongType(err) {
		return nil, fmt.Errorf("read %s: %w", ActiveOwnersKey, err)
	}
	sort.Strings(owners)
	var reg *ownerRegistry
	for start := 0; start < len(owners); start += rr.BatchSize {
		batch := owners[start:min(start+rr.BatchSize, len(owners))]
		cctx, cancel := context.WithTimeout(ctx, rr.Timeout)
		pipe := rr.RDB.Pipeline()
		cmds := make([]*redis.ScanCmd, len(batch))
		for i, o := range batch {
			cmds[i] = pipe.SScan(cctx, OwnerLocksPrefix+o, 0, "", registryPageSize)
		}
		_, err := pipe.Exec(cctx)
		cancel()
		if err != nil && !isWrongType(err) {
			return nil, fmt.Errorf("read owner registry: %w", err)
		}
		if reg == nil {
			total := 0
			for _, c := range cmds {
				keys, _ := c.Val()
				total += len(keys)
			}
			reg = newOwnerRegistry(owners, total)
		}
		for i, o := range batch {
			keys, cursor, err := cmds[i].Result()
			if err != nil {
				// A registry of the wrong type is not ours to judge; the
				// full scan still finds the locks themselves.
				continue
			}
			for {
				for _, k := range keys {
					if isLockKeyName(k) {
						reg.add(k, o)
					}
				}
				if cursor == 0 {
					break
				}
				cctx, cancel := context.WithTimeout(ctx, rr.Timeout)
				keys, cursor, err = rr.RDB.SScan(cctx, OwnerLocksPrefix+o, cursor, "", registryPageSize).Result()
				cancel()
				if isWrongType(err) {
					break
				}
				if err != nil {
					return nil, fmt.Errorf("read owner registry %s%s: %w", OwnerLocksPrefix, o, err)
				}
			}
		}
	}
	if reg == nil {
		reg = newOwnerRegistry(nil, 0)
	}
	return reg, nil
}

// readSet reads a set's members with SSCAN, a page per command, each
// member once (SSCAN may return one twice).
func (rr *Reader) readSet(ctx context.Context, key string) ([]string, error) {
	cctx, cancel := context.WithTimeout(ctx, rr.Timeout)
	page, next, err := rr.RDB.SScan(cctx, key, 0, "", registryPageSize).Result()
	cancel()
	if err != nil {
		return nil, err
	}
	return rr.readRest(ctx, key, page, next)
}

// readRest reads the rest of a set whose first SSCAN page (from cursor 0)
// was page and answered cursor, a page per command, and returns its
// members, each once (SSCAN may return one twice).
func (rr *Reader) readRest(ctx context.Context, key string, page []string, cursor uint64) ([]string, error) {
	if cursor == 0 {
		// One page, as SSCAN answers a small set: no duplicates.
		return page, nil
	}
	out := make([]string, 0, 2*len(page))
	seen := make(map[string]bool, 2*len(page))
	for {
		for _, m := range page {
			if !seen[m] {
				seen[m] = true
				out = append(out, m)
			}
		}
		if cursor == 0 {
			return out, nil
		}
		var err error
		cctx, cancel := context.WithTimeout(ctx, rr.Timeout)
		page, cursor, err = rr.RDB.SScan(cctx, key, cursor, "", registryPageSize).Result()
		cancel()
		if err != nil {
			return nil, err
		}
	}
}
