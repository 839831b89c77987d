package sim

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// The release script gives back a task's locks, touching only what owner holds.
//
// Same KEYS/ARGV layout as acquire. The task key and exclusive keys are
// deleted only while they are strings equal to owner; owner is removed from
// each shared set; every key leaves owner's registry; owner stays in
// pulp:active_owners (only a cleanup takes it out). Types are checked before
// GET and SREM so that a key of an unexpected type is reported instead of
// aborting the script after some of its writes.
var releaseScript = redis.NewScript(`
local owner = ARGV[1]
local n = tonumber(ARGV[2])
local notOwned = {}
for i = 1, n + 1 do
  if redis.call('TYPE', KEYS[i]).ok == 'string' and redis.call('GET', KEYS[i]) == owner then
    redis.call('DEL', KEYS[i])
  else
    table.insert(notOwned, KEYS[i])
  end
end
for i = n + 2, #KEYS do
  if redis.call('TYPE', KEYS[i]).ok ~= 'set' or redis.call('SREM', KEYS[i], owner) == 0 then
    table.insert(notOwned, KEYS[i])
  end
end
redis.call('SREM', '` + OwnerLocksPrefix + `' .. owner, unpack(KEYS))
return notOwned
`)

// Release atomically gives back the locks owner holds for a task. It returns
// the lock keys owner did not hold (missing, or held by someone else), which
// pulpcore only logs; releasing twice is harmless and reports every key the
// second time. Registry entries for the task's keys are removed; owner stays
// in pulp:active_owners.
func Release(ctx context.Context, rdb redis.Scripter, taskID, owner string, exclusive, shared []string) (notOwned []string, err error) {
	l := lockLayout(taskID, exclusive, shared)
	notOwned, err = releaseScript.Run(ctx, rdb, l.keys, l.args(owner)...).StringSlice()
	if err != nil {
		return nil, fmt.Errorf("release locks of task %s for %s: %w", taskID, owner, err)
	}
	return notOwned, nil
}

// The cleanup script is pulpcore's own cleanup of one owner, driven by its
// registry. KEYS: the owner's registry, pulp:active_owners. ARGV: owner.
// A string still equal to owner is deleted, a set loses owner, a missing key
// (or a string someone else now holds) just leaves the registry, and a key of
// another type stays and is reported. The owner leaves active_owners once its
// registry is empty.
var cleanupScript = redis.NewScript(`
local owner = ARGV[1]
local released = 0
local foreign = {}
for _, k in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  local t = redis.call('TYPE', k).ok
  if t == 'string' then
    if redis.call('GET', k) == owner then
      redis.call('DEL', k)
      released = released + 1
    end
    redis.call('SREM', KEYS[1], k)
  elseif t == 'set' then
    released = released + redis.call('SREM', k, owner)
    redis.call('SREM', KEYS[1], k)
  elseif t == 'none' then
    redis.call('SREM', KEYS[1], k)
  else
    table.insert(foreign, k)
  end
end
if redis.call('SCARD', KEYS[1]) == 0 then
  redis.call('SREM', KEYS[2], owner)
end
return {released, foreign}
`)

// CleanupOwner releases every lock registered under owner, as a restarted
// pulpcore worker does for its own name. It returns how many holdings it
// released and the registered keys it left because they have an unexpected
// type. Legacy (unregistered) locks are not found.
func CleanupOwner(ctx context.Context, rdb redis.Scripter, owner string) (released int, foreign []string, err error) {
	res, err := cleanupScript.Run(ctx, rdb, []string{OwnerLocksKey(owner), ActiveOwnersKey}, owner).Slice()
	if err != nil {
		return 0, nil, fmt.Errorf("clean up locks of %s: %w", owner, err)
	}
	if len(res) != 2 {
		return 0, nil, fmt.Errorf("clean up locks of %s: unexpected reply %v", owner, res)
	}
	n, _ := res[0].(int64)
	list, _ := res[1].([]any)
	for _, k := range list {
		if s, ok := k.(string); ok {
			foreign = append(foreign, s)
		}
	}
	return int(n), foreign, nil
}
