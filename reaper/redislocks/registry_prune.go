package redislocks

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/lock-reaper/lock-reaper/reaper/judge"
	"github.com/redis/go-redis/v9"
)

// Every script call and every command of a pass does bounded work, whatever
// the size of a registry: a Lua script blocks Redis for as long as it runs,
// and Pulp's own acquire and release wait (or get BUSY) meanwhile. A
// registry with a million stale entries took one release call 4.3 s when
// the call walked it whole.
const (
	// registryPageSize is the COUNT of each SSCAN of a registry or of
	// pulp:active_owners, in a script or from the reaper: a page of about
	// this many members costs Redis about a millisecond.
	registryPageSize = 1000
	// registryCheckLimit is about the most entries the release script's
	// new-task check and the retire script walk for one owner in one call
	// (registryCheckPages pages). A registry of more than a page is pruned
	// first, page by page (pruneRegistry); one still larger than this after
	// that (that many live entries: no owner holds so much) leaves the
	// owner's guarded holdings alone as owner-changed, and the owner listed.
	registryCheckLimit = registryCheckPages * registryPageSize
	registryCheckPages = 10
	// registryCallPages bounds the SSCAN pages one release call walks in
	// all, for every guarded owner's new-task check together, and the pages
	// past each owner's first that one retire call walks. A page of a
	// dense registry is bounded by its COUNT; a page of a sparse one (a
	// large hash table with few members left) visits up to ten empty
	// buckets per COUNT, about a millisecond when they are not in the
	// cache. An owner whose check needs more pages than the call has left
	// is handed back, to a call of its own, where it has them all; one
	// that needs more than that keeps its guarded holdings (owner-changed).
	// Past the budget each owner still gets the one page that reads a
	// small registry whole (the batches bound those by their entries).
	registryCallPages = 100
	// registryCallBudget bounds the registry entries one release or retire
	// call walks in all: batches are cut so that the guarded owners of one
	// release call have at most this many entries together.
	registryCallBudget = 20_000
	// registryCountLimit is the largest registry the release script counts
	// or walks for an owner's new-task check, so that no call blocks Redis
	// for long (BENCHMARKS.md has the cost a registry entry).
	// A larger one leaves the check to the reserving tasks' task locks.
	registryCountLimit = registryCallBudget
)

// pruneRegistryScript walks one page of an owner's registry from a cursor
// and removes the entries of lock keys that no longer exist, each checked
// and removed at the same instant, as the release and retire scripts do. An
// entry of a key that exists, or of a name that is no lock key, stays.
//
// KEYS[1]: the registry. ARGV: the cursor, the page size, and "1" to stop at
// the first entry of a key that exists (an owner to retire is then known to
// stay). It returns the next cursor ("0" at the end), the entries pruned and
// 1 when an entry of an existing key was seen. A registry that is not a set
// is left alone and ends the walk.
var pruneRegistryScript = redis.NewScript(aclCheckLua(
	[]string{"'TYPE'", "(KEYS[1] or '" + judge.TaskKeyPrefix + "x')"}, []string{"'SSCAN'", "(KEYS[1] or '" + judge.TaskKeyPrefix + "x')", "'0'"},
	[]string{"'EXISTS'", luaString(judge.TaskKeyPrefix + "x")}, []string{"'SREM'", "(KEYS[1] or '" + judge.TaskKeyPrefix + "x')", "'x'"},
) + `
local registry = KEYS[1]
if redis.call('TYPE', registry)['ok'] ~= 'set' then return {'0', 0, 1} end
local page = redis.call('SSCAN', registry, ARGV[1], 'COUNT', tonumber(ARGV[2]))
local gone, held = {}, 0
for _, key in ipairs(page[2]) do
  local lock = string.sub(key, 1, #'` + judge.TaskKeyPrefix + `') == '` + judge.TaskKeyPrefix + `'
      or string.sub(key, 1, #'` + judge.ResourceKeyPrefix + `') == '` + judge.ResourceKeyPrefix + `'
  if not lock or redis.call('EXISTS', key) == 1 then
    held = 1
  else
    gone[#gone + 1] = key
  end
end
for from = 1, #gone, 1000 do
  redis.call('SREM', registry, unpack(gone, from, math.min(from + 999, #gone)))
end
local cursor = page[1]
if held == 1 and ARGV[3] == '1' then cursor = '0' end
return {cursor, #gone, held}
`)

// pruneRegistry walks an owner's registry page by page, one script call per
// page, and removes the entries of keys that are gone. Between calls Pulp's
// own scripts run: an entry it adds meanwhile is of a key that exists, and
// stays. With stopAtHeld the walk ends at the first entry of an existing
// key. It returns the entries pruned and whether one of an existing key (or
// a registry that is no set) was seen. A registry that lost entries is then
// settled (settleRegistry).
func pruneRegistry(ctx context.Context, rdb redis.UniversalClient, timeout time.Duration, owner string, stopAtHeld bool) (pruned int64, held bool, err error) {
	stop := "0"
	if stopAtHeld {
		stop = "1"
	}
	cursor := "0"
	for {
		cctx, cancel := context.WithTimeout(ctx, timeout)
		raw, err := pruneRegistryScript.Run(cctx, rdb, []string{OwnerLocksPrefix + owner}, cursor, registryPageSize, stop).Slice()
		cancel()
		if err != nil {
			return pruned, held, fmt.Errorf("prune registry %s%s: %w", OwnerLocksPrefix, owner, err)
		}
		if len(raw) != 3 {
			return pruned, held, fmt.Errorf("prune registry %s%s: unexpected reply %v", OwnerLocksPrefix, owner, raw)
		}
		next, _ := raw[0].(string)
		n, _ := raw[1].(int64)
		h, _ := raw[2].(int64)
		pruned += n
		held = held || h == 1
		if next == "0" || next == "" {
			return pruned, held, settleRegistry(ctx, rdb, timeout, owner, pruned)
		}
		if err := ctx.Err(); err != nil {
			return pruned, held, err
		}
		cursor = next
	}
}

// settleLookups is the number of lookups of one settling command.
const settleLookups = 10_000

// settleRegistry helps Redis finish shrinking the hash table of a registry
// that lost pruned entries, so that the walks after it (the release
// script's new-task check, the retire script) visit a small table. Redis
// shrinks a set's table when a removal leaves it less than a tenth full,
// but moves the members to the new table a bucket per operation on the set
// (each visiting at most ten empty buckets); until then SSCAN visits the
// old table too, and each of its steps visits every old bucket that maps to
// one new bucket: right after a large prune, one SSCAN page of the few
// entries left can walk the whole old table. Each lookup moves
// the rehashing on a step: the registry is asked SMISMEMBER of
// settleLookups names (none a member; the answer is not looked at) as many
// times as the pruned entries' table may need, each command a fraction of
// a millisecond. A set that is not rehashing only answers the lookups.
func settleRegistry(ctx context.Context, rdb redis.UniversalClient, timeout time.Duration, owner string, pruned int64) error {
	if pruned < registryPageSize {
		return nil
	}
	// The old table has at most twice as many buckets as it had entries:
	// a tenth of that is steps over empty buckets, plus one per bucket moved.
	steps := pruned/4 + settleLookups
	names := make([]any, settleLookups)
	for i := range names {
		names[i] = ""
	}
	for done := int64(0); done < steps; done += settleLookups {
		cctx, cancel := context.WithTimeout(ctx, timeout)
		err := rdb.SMIsMember(cctx, OwnerLocksPrefix+owner, names...).Err()
		cancel()
		if isWrongType(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("settle registry %s%s: %w", OwnerLocksPrefix, owner, err)
		}
	}
	return nil
}

// registrySizes reads the first SSCAN page of each owner's registry in one
// pipeline, as the reaper's ACL allows (no SCARD): a registry the page holds
// whole gets its size, a larger one registryCheckLimit (it costs a release
// call at most that much), and one that is not a set 0 (the scripts leave it
// alone). large lists the owners whose registry needs more than one page.
func registrySizes(ctx context.Context, rdb redis.UniversalClient, timeout time.Duration, owners []string) (sizes map[string]int64, large []string, err error) {
	sizes = make(map[string]int64, len(owners))
	if len(owners) == 0 {
		return sizes, nil, nil
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	pipe := rdb.Pipeline()
	cmds := make([]*redis.ScanCmd, len(owners))
	for i, o := range owners {
		cmds[i] = pipe.SScan(cctx, OwnerLocksPrefix+o, 0, "", registryPageSize)
	}
	if _, err := pipe.Exec(cctx); err != nil && !isWrongType(err) {
		return nil, nil, fmt.Errorf("read the first pages of %d owner registries: %w", len(owners), err)
	}
	for i, o := range owners {
		page, cursor, err := cmds[i].Result()
		switch {
		case err != nil:
		case cursor != 0:
			sizes[o] = registryCheckLimit
			large = append(large, o)
		default:
			sizes[o] = int64(len(page))
		}
	}
	return sizes, large, nil
}

// luaInt renders a constant for a script's text.
func luaInt(n int) string { return strconv.Itoa(n) }
