package sim

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// The acquire script takes a task's locks all or nothing.
//
// KEYS: the task key, the exclusive resource keys (sorted), the shared
// resource keys (sorted). ARGV: owner, number of exclusive keys, then the
// resource names in KEYS order (ARGV[i+1] names KEYS[i]).
//
// It fails, writing nothing, if the task key exists, if any exclusive key
// exists, or if a shared key holds a string (an exclusive holder). A shared key
// of any other non-set type also blocks: pulpcore's script would fail halfway
// through its writes on it, and a simulator must never leave half a lock.
const acquireCheck = `
local owner = ARGV[1]
local n = tonumber(ARGV[2])
if redis.call('EXISTS', KEYS[1]) == 1 then
  return {'` + TaskLockBlocked + `'}
end
local blocked = {}
for i = 2, n + 1 do
  if redis.call('EXISTS', KEYS[i]) == 1 then
    table.insert(blocked, ARGV[i + 1])
  end
end
for i = n + 2, #KEYS do
  local t = redis.call('TYPE', KEYS[i]).ok
  if t ~= 'none' and t ~= 'set' then
    table.insert(blocked, ARGV[i + 1])
  end
end
if #blocked > 0 then
  return blocked
end
redis.call('SET', KEYS[1], owner)
for i = 2, n + 1 do
  redis.call('SET', KEYS[i], owner)
end
for i = n + 2, #KEYS do
  redis.call('SADD', KEYS[i], owner)
end
`

// acquireRegister is the owner-registry part that workers since mid-2026 add:
// every key goes into the owner's registry and the owner into active_owners.
const acquireRegister = `
redis.call('SADD', '` + OwnerLocksPrefix + `' .. owner, unpack(KEYS))
redis.call('SADD', '` + ActiveOwnersKey + `', owner)
`

var (
	acquireScript       = redis.NewScript(acquireCheck + acquireRegister + "return {}\n")
	acquireLegacyScript = redis.NewScript(acquireCheck + "return {}\n")
)

// Acquire atomically takes the task lock and the task's resource locks for
// owner, registering them in the owner registry, exactly as a current
// pulpcore worker does. It returns the names that blocked it (resource names,
// or TaskLockBlocked for the task key) and writes nothing in that case; an
// empty result means every lock is now held by owner.
func Acquire(ctx context.Context, rdb redis.Scripter, taskID, owner string, exclusive, shared []string) (blocked []string, err error) {
	return runAcquire(ctx, rdb, acquireScript, taskID, owner, exclusive, shared)
}

// AcquireLegacy is Acquire as workers older than the owner registry did it:
// the same locks, but no pulp:owner_locks entry and no pulp:active_owners
// membership, so only a keyspace SCAN finds them.
func AcquireLegacy(ctx context.Context, rdb redis.Scripter, taskID, owner string, exclusive, shared []string) (blocked []string, err error) {
	return runAcquire(ctx, rdb, acquireLegacyScript, taskID, owner, exclusive, shared)
}

func runAcquire(ctx context.Context, rdb redis.Scripter, script *redis.Script, taskID, owner string, exclusive, shared []string) ([]string, error) {
	l := lockLayout(taskID, exclusive, shared)
	blocked, err := script.Run(ctx, rdb, l.keys, l.args(owner)...).StringSlice()
	if err != nil {
		return nil, fmt.Errorf("acquire locks of task %s for %s: %w", taskID, owner, err)
	}
	return blocked, nil
}
