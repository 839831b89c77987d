package reaper

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lock-reaper/lock-reaper/heartbeat"
)

// retireScript leaves Redis as pulpcore's own cleanup leaves it: every owner
// of pulp:active_owners that has no live row (ARGV lists the owners that
// have one) loses the entries of its registry whose key no longer exists,
// and leaves pulp:active_owners once its registry is empty. An owner whose
// registry still lists an existing key stays, whoever holds that key now,
// and so does one whose registry is not a set: not ours to judge. Only lock
// keys are looked up; an entry of another name counts as existing.
//
// It returns the number of entries pruned and the owners that left.
var retireScript = redis.NewScript(`
local active = '` + ActiveOwnersKey + `'
if redis.call('TYPE', active)['ok'] ~= 'set' then return {0, {}} end
local live = {}
for _, o in ipairs(ARGV) do live[o] = true end
local function is_lock_key(k)
  return string.sub(k, 1, #'` + TaskKeyPrefix + `') == '` + TaskKeyPrefix + `'
      or string.sub(k, 1, #'` + ResourceKeyPrefix + `') == '` + ResourceKeyPrefix + `'
end
local pruned, retired = 0, {}
for _, owner in ipairs(redis.call('SMEMBERS', active)) do
  if not live[owner] then
    local registry = '` + OwnerLocksPrefix + `' .. owner
    local kind = redis.call('TYPE', registry)['ok']
    if kind == 'set' then
      local gone, holds, cursor = {}, false, '0'
      repeat
        local page = redis.call('SSCAN', registry, cursor, 'COUNT', 1000)
        cursor = page[1]
        for _, key in ipairs(page[2]) do
          if not is_lock_key(key) or redis.call('EXISTS', key) == 1 then
            holds = true
          else
            gone[#gone + 1] = key
          end
        end
      until cursor == '0' or holds
      for from = 1, #gone, 1000 do
        redis.call('SREM', registry, unpack(gone, from, math.min(from + 999, #gone)))
      end
      pruned = pruned + #gone
      kind = redis.call('TYPE', registry)['ok']
    end
    if kind == 'none' then
      redis.call('SREM', active, owner)
      retired[#retired + 1] = owner
    end
  end
end
return {pruned, retired}
`)

// retireOwners runs retireScript with the owners that have a live (or late)
// row in the snapshot. An owner that takes a lock after the snapshot is in
// its registry again by then (pulpcore's acquire script writes both at
// once), so it stays.
func retireOwners(ctx context.Context, rdb redis.UniversalClient, timeout time.Duration, log *slog.Logger, owners []heartbeat.Owner) error {
	live := make([]any, 0, len(owners))
	for _, o := range owners {
		if o.Liveness == heartbeat.Alive || o.Liveness == heartbeat.Late {
			live = append(live, o.Name)
		}
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	raw, err := retireScript.Run(cctx, rdb, nil, live...).Slice()
	if err != nil {
		return fmt.Errorf("prune owner registries and %s: %w", ActiveOwnersKey, err)
	}
	if len(raw) != 2 {
		return fmt.Errorf("prune owner registries: unexpected reply %v", raw)
	}
	pruned, _ := raw[0].(int64)
	retired, _ := raw[1].([]any)
	if pruned > 0 {
		log.Info("pruned owner registry entries of keys that are gone", slog.Int64("entries", pruned))
	}
	for _, o := range retired {
		name, _ := o.(string)
		log.Info("owner left "+ActiveOwnersKey, slog.String("owner", name))
	}
	return nil
}
