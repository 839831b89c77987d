package redislocks

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lock-reaper/lock-reaper/reaper/judge"
)

// RegistrySeenPrefix starts lock-reaper's own sets of the keys a pass's
// snapshot saw each guarded owner's registry list: one per owner and pass,
// RegistrySeenPrefix + token + ":" + owner.
const RegistrySeenPrefix = "pulp:lock_reaper:registry_seen:"

// seenTTL bounds how long a pass's registries seen outlive it when the pass
// dies before it deletes them. A release phase that runs longer only finds
// them gone, which leaves its guarded holdings alone.
const seenTTL = time.Hour

// seenChunk is how many members one SADD writes, and seenPipe how many
// SADDs go in one round trip: the arguments of one round trip stay small
// however many locks an owner holds.
const (
	seenChunk = 1000
	seenPipe  = 16
)

// SeenRegistries lists the keys the snapshot (its holdings) saw each
// owner's registry list, for the owners with a guarded release in listed
// (a resource of a live or late owner), each key once and sorted: the
// release script leaves such a resource alone when the owner's registry has
// since listed a task lock not among them. Only a pass that releases asks.
func SeenRegistries(holdings []judge.Holding, listed []judge.Judgement) map[string][]string {
	seen := map[string][]string{}
	for _, jd := range listed {
		if jd.Action == judge.ActionRelease && judge.Guarded(jd) {
			seen[jd.Owner] = []string{}
		}
	}
	if len(seen) == 0 {
		return seen
	}
	for _, h := range holdings {
		if keys, want := seen[h.Owner]; want && h.Registered {
			seen[h.Owner] = append(keys, h.Key)
		}
	}
	for owner, keys := range seen {
		slices.Sort(keys)
		seen[owner] = slices.Compact(keys)
	}
	return seen
}

// RememberSeen stores, for the release script's new-task check, the keys
// the snapshot saw each owner's registry list (SeenRegistries), once
// for the pass, and returns a function that deletes them again. Only the
// owners listed are stored: those with guarded holdings to release. The
// releases that follow on r use them; a release without them leaves every
// guarded holding of an owner whose registry lists a task lock alone.
func (r *Releaser) RememberSeen(ctx context.Context, seen map[string][]string, owners []string) (forget func(), err error) {
	var b [12]byte
	_, _ = rand.Read(b[:])
	token := hex.EncodeToString(b[:])
	var written, writtenOwners []string
	forget = func() {
		ctx := context.WithoutCancel(ctx)
		for i, set := range written {
			r.shrinkSeen(ctx, set, seen[writtenOwners[i]])
		}
		groups := seenDeletes(written, func(i int) int { return len(seen[writtenOwners[i]]) })
		for from := 0; from < len(groups); from += seenPipe {
			cctx, cancel := context.WithTimeout(ctx, r.Timeout)
			_, err := r.RDB.Pipelined(cctx, func(p redis.Pipeliner) error {
				for _, keys := range groups[from:min(from+seenPipe, len(groups))] {
					p.Del(cctx, keys...)
				}
				return nil
			})
			if err != nil && r.Log != nil {
				r.Log.Warn("delete the registries seen of the pass; they expire on their own",
					"keys", len(written), "ttl", seenTTL, "err", err)
			}
			cancel()
		}
	}
	for _, o := range owners {
		keys := seen[o]
		if len(keys) == 0 {
			continue
		}
		set := RegistrySeenPrefix + token + ":" + o
		written, writtenOwners = append(written, set), append(writtenOwners, o)
		if err := r.writeSeen(ctx, set, keys); err != nil {
			forget()
			return nil, err
		}
	}
	r.seenToken = token
	return forget, nil
}

// seenDeletes groups the sets written into DEL commands that each free at
// most seenChunk members (and name at most seenChunk keys): DEL frees every
// member of every set it is given in the one command, and a pass over
// hundreds of live owners with a few hundred locks each wrote as many sets
// (one DEL of them all blocked Redis for 41-49 ms: BENCHMARKS.md). A set
// of more than seenChunk members, emptied by shrinkSeen first, counts as
// none.
func seenDeletes(written []string, members func(i int) int) [][]string {
	var groups [][]string
	var group []string
	freed := 0
	for i, set := range written {
		n := members(i)
		if n > seenChunk {
			n = 0
		}
		if len(group) > 0 && (freed+n > seenChunk || len(group) == seenChunk) {
			groups, group, freed = append(groups, group), nil, 0
		}
		group, freed = append(group, set), freed+n
	}
	if len(group) > 0 {
		groups = append(groups, group)
	}
	return groups
}

// shrinkSeen empties a large set of keys seen a chunk per command before
// forget deletes it: DEL frees a set's members in the one command, which
// blocks Redis for as long as a large set takes (a live owner's leaked locks
// make it long: BENCHMARKS.md). UNLINK would free them in the background,
// but takes a command the reaper's ACL has not had. A set of one chunk or
// less is left to the DEL.
func (r *Releaser) shrinkSeen(ctx context.Context, set string, keys []string) {
	if len(keys) <= seenChunk {
		return
	}
	err := r.eachSeenChunk(ctx, set, keys, func(cctx context.Context, p redis.Pipeliner, members []any) {
		p.SRem(cctx, set, members...)
	}, false)
	if err != nil && r.Log != nil {
		r.Log.Warn("empty the registry seen of the pass; it is deleted whole", "key", set, "err", err)
	}
}

// writeSeen writes one owner's set of keys seen in bounded round trips,
// each of which ends by setting the expiry, so that no failure leaves a set
// behind for good.
func (r *Releaser) writeSeen(ctx context.Context, set string, keys []string) error {
	err := r.eachSeenChunk(ctx, set, keys, func(cctx context.Context, p redis.Pipeliner, members []any) {
		p.SAdd(cctx, set, members...)
	}, true)
	if err != nil {
		return fmt.Errorf("store the registry seen for the release's new-task check in %s: %w", set, err)
	}
	return nil
}

// eachSeenChunk sends one command per seenChunk of keys, seenPipe to a
// round trip, each round trip ending with the set's expiry when expire.
func (r *Releaser) eachSeenChunk(ctx context.Context, set string, keys []string, do func(context.Context, redis.Pipeliner, []any), expire bool) error {
	members := make([]any, 0, seenChunk)
	for from := 0; from < len(keys); from += seenChunk * seenPipe {
		cctx, cancel := context.WithTimeout(ctx, r.Timeout)
		_, err := r.RDB.Pipelined(cctx, func(p redis.Pipeliner) error {
			for c := from; c < min(from+seenChunk*seenPipe, len(keys)); c += seenChunk {
				members = members[:0]
				for _, k := range keys[c:min(c+seenChunk, len(keys))] {
					members = append(members, k)
				}
				do(cctx, p, members)
			}
			if expire {
				p.Expire(cctx, set, seenTTL)
			}
			return nil
		})
		cancel()
		if err != nil {
			return err
		}
	}
	return nil
}
