package redislocks

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/lock-reaper/lock-reaper/heartbeat"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
	"github.com/redis/go-redis/v9"
)

// retireScript leaves Redis as pulpcore's own cleanup leaves it, for the
// owners ARGV names after its first argument (owners of pulp:active_owners
// without a live row): each loses the entries of its registry whose key no
// longer exists, and leaves pulp:active_owners once its registry is empty.
// An owner whose registry still lists an existing key stays, whoever holds
// that key now, and so does one whose registry is not a set: not ours to
// judge. Only lock keys are looked up; an entry of another name counts as
// existing.
//
// Its work is bounded: ARGV[1] is the budget of registry entries (and
// owners) it may walk, it walks at most registryCheckPages pages of one
// registry, and at most about registryCallPages pages past each owner's
// first in all. An owner whose registry is longer (and lists no existing key in
// those pages) is returned as large, for the reaper to prune page by page
// (pruneRegistry) and name again; the call stops before the first owner
// past the budget, the first owner always walked.
//
// It returns the number of entries pruned, the owners that left, the large
// owners, and the index in ARGV of the first owner it did not look at.
var retireScript = redis.NewScript(aclCheckLua(
	[]string{"'TYPE'", luaString(ActiveOwnersKey)}, []string{"'SSCAN'", luaString(OwnerLocksPrefix + "x"), "'0'"},
	[]string{"'EXISTS'", luaString(judge.TaskKeyPrefix + "x")}, []string{"'SREM'", luaString(OwnerLocksPrefix + "x"), "'x'"},
	[]string{"'SREM'", luaString(ActiveOwnersKey), "'x'"},
) + `
local active = '` + ActiveOwnersKey + `'
if redis.call('TYPE', active)['ok'] ~= 'set' then return {0, {}, {}, #ARGV + 1} end
local function is_lock_key(k)
  return string.sub(k, 1, #'` + judge.TaskKeyPrefix + `') == '` + judge.TaskKeyPrefix + `'
      or string.sub(k, 1, #'` + judge.ResourceKeyPrefix + `') == '` + judge.ResourceKeyPrefix + `'
end
local budget = tonumber(ARGV[1])
local pruned, retired, large, walked, more_pages = 0, {}, {}, 0, 0
local i = 2
while i <= #ARGV do
  if (walked >= budget or more_pages >= ` + luaInt(registryCallPages) + `) and i > 2 then break end
  local owner = ARGV[i]
  local registry = '` + OwnerLocksPrefix + `' .. owner
  local kind = redis.call('TYPE', registry)['ok']
  walked = walked + 1
  if kind == 'set' then
    local gone, holds, cursor, pages = {}, false, '0', 0
    repeat
      local page = redis.call('SSCAN', registry, cursor, 'COUNT', ` + luaInt(registryPageSize) + `)
      cursor, pages, walked = page[1], pages + 1, walked + #page[2]
      for _, key in ipairs(page[2]) do
        if not is_lock_key(key) or redis.call('EXISTS', key) == 1 then
          holds = true
        else
          gone[#gone + 1] = key
        end
      end
    until cursor == '0' or holds or pages >= ` + luaInt(registryCheckPages) + `
    more_pages = more_pages + pages - 1
    if cursor ~= '0' and not holds then
      large[#large + 1] = owner
    end
    for from = 1, #gone, 1000 do
      redis.call('SREM', registry, unpack(gone, from, math.min(from + 999, #gone)))
    end
    pruned = pruned + #gone
    kind = redis.call('TYPE', registry)['ok']
  end
  if kind == 'none' and redis.call('SREM', active, owner) == 1 then
    retired[#retired + 1] = owner
  end
  i = i + 1
end
return {pruned, retired, large, i}
`)

// retireOwnersPerCall bounds the owners one retire call is given.
const retireOwnersPerCall = 1000

// RetireOwners runs retireScript for the owners of pulp:active_owners that
// have no live (or late) row in the snapshot, read with SSCAN a page at a
// time. An owner that takes a lock after the snapshot is in its registry
// again by then (pulpcore's acquire script writes both at once), so it
// stays.
func RetireOwners(ctx context.Context, rdb redis.UniversalClient, timeout time.Duration, log *slog.Logger, owners []heartbeat.Owner) error {
	live := make(map[string]bool, len(owners))
	for _, o := range owners {
		if o.Liveness == heartbeat.Alive || o.Liveness == heartbeat.Late {
			live[o.Name] = true
		}
	}
	candidates, err := activeOwnersBut(ctx, rdb, timeout, live)
	if err != nil || len(candidates) == 0 {
		return err
	}
	var pruned int64
	var retired []string
	run := func(names []string) ([]string, error) {
		var large []string
		for len(names) > 0 {
			group := names[:min(retireOwnersPerCall, len(names))]
			args := make([]any, 0, len(group)+1)
			args = append(args, registryCallBudget)
			for _, o := range group {
				args = append(args, o)
			}
			cctx, cancel := context.WithTimeout(ctx, timeout)
			raw, err := retireScript.Run(cctx, rdb, nil, args...).Slice()
			cancel()
			if err != nil {
				return nil, fmt.Errorf("prune owner registries and %s: %w", ActiveOwnersKey, err)
			}
			if len(raw) != 4 {
				return nil, fmt.Errorf("prune owner registries: unexpected reply %v", raw)
			}
			n, _ := raw[0].(int64)
			pruned += n
			retired = appendStrings(retired, raw[1])
			large = appendStrings(large, raw[2])
			next, _ := raw[3].(int64)
			// next is the ARGV index (from 1, the budget first) of the first
			// owner not looked at.
			looked := int(next) - 2
			if looked < 1 || looked > len(group) {
				looked = len(group)
			}
			names = names[looked:]
		}
		return large, nil
	}
	large, err := run(candidates)
	if err != nil {
		return err
	}
	// A large registry is pruned a page per call, then its owner named
	// again: gone once its registry is empty.
	var again []string
	for _, o := range large {
		n, held, err := pruneRegistry(ctx, rdb, timeout, o, true)
		pruned += n
		if err != nil {
			return err
		}
		if !held {
			again = append(again, o)
		}
	}
	if _, err := run(again); err != nil {
		return err
	}
	if pruned > 0 {
		log.Info("pruned owner registry entries of keys that are gone", slog.Int64("entries", pruned))
	}
	for _, o := range retired {
		log.Info("owner left "+ActiveOwnersKey, slog.String("owner", o))
	}
	return nil
}

// activeOwnersBut lists the members of pulp:active_owners not in but, a page
// of SSCAN at a time; none when it is not a set.
func activeOwnersBut(ctx context.Context, rdb redis.UniversalClient, timeout time.Duration, but map[string]bool) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	var cursor uint64
	for {
		cctx, cancel := context.WithTimeout(ctx, timeout)
		page, next, err := rdb.SScan(cctx, ActiveOwnersKey, cursor, "", registryPageSize).Result()
		cancel()
		if isWrongType(err) {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", ActiveOwnersKey, err)
		}
		for _, o := range page {
			// SSCAN may return a member twice.
			if !but[o] && !seen[o] {
				seen[o] = true
				out = append(out, o)
			}
		}
		if next == 0 {
			return out, nil
		}
		cursor = next
	}
}

func appendStrings(out []string, raw any) []string {
	items, _ := raw.([]any)
	for _, it := range items {
		if s, ok := it.(string); ok {
			out = append(out, s)
		}
	}
	return out
}
