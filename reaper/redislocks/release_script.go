package redislocks

import (
	"github.com/redis/go-redis/v9"

	"github.com/lock-reaper/lock-reaper/reaper/judge"
)

// releaseScript compares and releases a batch of holdings atomically.
//
// KEYS: the lock keys, one per holding.
// ARGV: n, then one string of n flags, one per holding: "x" for a string
// lock, "s" for a shared member, "X" and "S" for the same when guarded; then
// n owners, then the token of the pass's stored registries seen
// (RememberSeen), then the reserving tasks: g, and for each of g lock keys
// the key, m and the task keys of the m incomplete tasks reserving its
// resource, then s and s pairs of a task key and the owner for whom that task
// is no new task (its own stale lock); then the owners judged dead or gone
// that may leave pulp:active_owners once their registry is empty.
//
// A string lock is deleted only while its value is still the observed owner;
// a shared set loses only that member. A key leaves the owner's registry once
// the owner no longer holds it. It returns one string of n result codes
// (Outcome, or handedBack). The flags and the results travel as one string each rather
// than an argument or a reply per holding: each of those costs the call
// about as much as a command inside it.
//
// Lock values are owner names, not tokens: a live owner that took a new task
// since the snapshot may hold the same resource again, for the new task (a
// shared domain membership is the common case). So a guarded holding (a
// resource of a live or late owner) is only released while the owner's
// registry lists no task lock the snapshot did not see; otherwise it is left
// alone as owner-changed, and the next pass judges it afresh. The keys the
// snapshot saw the owner's registry list are stored in Redis once for the
// pass, a set per owner (RememberSeen), rather than sent with every call.
// Only an acquire adds to a registry, so when the registry lists nothing
// but keys the snapshot saw (SINTERCARD of the two equals SCARD of the
// registry) the owner took no task: a count in Redis, about three times
// cheaper an entry than walking the registry (BENCHMARKS.md).
// Otherwise the script walks the registry's task keys a page at a time and
// asks the set about each page (SMISMEMBER). A registry entry the snapshot
// did not see whose key no longer exists is stale (pulpcore's legacy
// cleanup and operators delete locks with a plain DEL) and is pruned there
// and then, atomically; only an entry whose key exists means a new task. A
// stale entry so never blocks the owner's other releases. A missing set
// (expired, evicted, never stored) reads as nothing seen, which can only
// leave holdings alone.
//
// pulpcore releases before 3.117 keep no registry, so the check above cannot
// see their new tasks. For them, and for every owner alike, a guarded
// shared membership also comes with the task locks of the incomplete tasks
// that reserve its resource shared, read from the database just before the
// call (pulpdb.ReadSharedReservers): pulpcore's acquire takes a task's task
// lock together with its resources, so one of them held by the owner means
// the owner took that task, and the membership is left alone
// (owner-changed). The acquire adds an owner already in the set without a
// trace, and a removed membership would leave the new task running without
// it. (An exclusive lock is not taken again while it stands: the acquire
// fails on a key that exists.) Every Pulp task reserves its domain shared,
// so a backlog of waiting tasks makes that list long for each of the
// domain's members: a key's list comes to a call once, its task locks are
// read once (MGET, a page at a time; a GET each for a user whose ACL lacks
// MGET) into the owners holding them, and each
// membership asks its own owner's, so a call's cost grows with the tasks it
// is sent, not with tasks times memberships; Release sends a call only as
// many as its budget of work leaves beside its holdings (release_call.go),
// and never a key's list longer than ReserverCallLimit.
//
// Counting a registry costs time an entry, in a script that blocks Redis,
// so a call counts (or
// walks) no registry of more than registryCountLimit entries: a live owner
// that leaked a hundred thousand locks would make every call of its
// releases count them all. Such an owner's guarded holdings are released
// on the reserving tasks' check of its shared memberships alone, which
// costs the same whatever the registry's size, until its releases bring the
// registry under the limit.
//
// The new-task check walks at most registryCheckLimit entries of one
// owner's registry; the reaper prunes a larger one beforehand, a page per
// call (pruneRegistry), and cuts the batches so that one call walks at most
// registryCallBudget entries in all, and counts each owner's entries in the
// call's budget of work (release_call.go). An owner whose registry is still larger
// keeps its guarded holdings (owner-changed): no call may block Redis for
// long. The checks of one call walk at most registryCallPages SSCAN pages
// together, however sparse the tables: an owner whose check runs out of
// them is handed back ('b', untouched) unless it was the first checked in
// the call, which had them all and is left owner-changed; Release runs the
// holdings handed back in a further call.
//
// The registry keys are only touched while they are sets: a Redis error in a
// script does not undo the writes before it, so a registry key of another
// type must neither fail the batch half-done nor block every later pass.
//
// The string locks to delete and the registry entries to remove are written
// at the end, one DEL for the batch and one SREM per owner, rather than a
// command per holding: the cost of a script is mostly its calls into Redis.
// Nothing else in the script changes a string lock or reads a registry entry
// the end removes (a removed entry is a key of the owner's own holdings, a
// task lock the snapshot saw or no task key at all, so the new-task check
// counts it alike on both sides), and a key deleted at the end is absent for
// every holding after it (gone), so the results are those of writing at once.
var releaseScript = redis.NewScript(aclCheckLua(
	[]string{"'TYPE'", "(KEYS[1] or '" + judge.TaskKeyPrefix + "x')"}, []string{"'EXISTS'", "(KEYS[1] or '" + judge.TaskKeyPrefix + "x')"}, []string{"'GET'", "(KEYS[1] or '" + judge.TaskKeyPrefix + "x')"}, []string{"'DEL'", "(KEYS[1] or '" + judge.TaskKeyPrefix + "x')"},
	[]string{"'SREM'", "(KEYS[1] or '" + judge.TaskKeyPrefix + "x')", "'x'"}, []string{"'SISMEMBER'", "(KEYS[1] or '" + judge.TaskKeyPrefix + "x')", "'x'"},
	[]string{"'SCARD'", luaString(OwnerLocksPrefix + "x")}, []string{"'SSCAN'", luaString(OwnerLocksPrefix + "x"), "'0'"},
	[]string{"'SREM'", luaString(OwnerLocksPrefix + "x"), "'x'"}, []string{"'SREM'", luaString(ActiveOwnersKey), "'x'"},
	[]string{"'SMISMEMBER'", luaString(RegistrySeenPrefix + "x"), "'x'"},
) + `
local n, flags = tonumber(ARGV[1]), ARGV[2]
local out = {}
local function is_set(k) return redis.call('TYPE', k)['ok'] == 'set' end
local token = ARGV[n + 3]
-- held_by[lock key][owner]: the task keys, among the incomplete tasks
-- reserving the key's resource, whose task lock the owner holds (less the
-- owner's own stale ones). Each key's tasks are read once, a page of
-- MGET at a time, before anything is written; a holding then asks its
-- owner's list alone.
local held_by = {}
-- Only the guarded owners of this call are ever asked about: a task lock
-- another name holds is no new task of theirs, and is not kept.
local guarded = {}
for i = 1, n do
  local flag = string.sub(flags, i, i)
  if flag == 'X' or flag == 'S' then guarded[ARGV[2 + i]] = true end
end
local j = n + 5
for _ = 1, tonumber(ARGV[n + 4]) do
  local key, m = ARGV[j], tonumber(ARGV[j + 1])
  local first, s = j + 2, tonumber(ARGV[j + 2 + m])
  local stale = {}
  for k = j + 3 + m, j + 2 + m + 2 * s, 2 do
    stale[ARGV[k]] = ARGV[k + 1]
  end
  local holders = {}
  for from = first, first + m - 1, 1000 do
    local last = math.min(from + 999, first + m - 1)
    -- MGET answers false for a missing key and for one of another type. A
    -- user whose ACL lacks MGET (made before the reader used it) reads the
    -- page a GET a key.
    local values = redis.pcall('MGET', unpack(ARGV, from, last))
    if values.err then
      values = {}
      for k = from, last do
        local value = redis.pcall('GET', ARGV[k])
        values[k - from + 1] = type(value) == 'string' and value
      end
    end
    for k = 1, last - from + 1 do
      local value = values[k]
      local task = value and guarded[value] and ARGV[from + k - 1]
      if task and stale[task] ~= value then
        local tasks = holders[value]
        if tasks == nil then
          tasks = {}
          holders[value] = tasks
        end
        tasks[#tasks + 1] = task
      end
    end
  end
  held_by[key] = holders
  j = j + 3 + m + 2 * s
end
local pos = j - 1
-- A registry that is a set stays one, or goes once empty (SREM of a missing
-- key does nothing): its type is asked once per owner.
local registry_set = {}
local function registry_is_set(owner)
  if registry_set[owner] == nil then
    registry_set[owner] = is_set('` + OwnerLocksPrefix + `' .. owner)
  end
  return registry_set[owner]
end
-- gone lists the string locks this call deletes at the end: absent from
-- the moment they are released.
local gone, dels = {}, {}
local function exists(key)
  return not gone[key] and redis.call('EXISTS', key) == 1
end
-- busy[owner] is false while the owner took no new task since the
-- snapshot, 'o' when it may have, and 'b' when the call's SSCAN pages ran
-- out before its check ended: its holdings are handed back, for a call of
-- their own. The first owner checked has every page of the call, and is
-- never handed back: its check ending early leaves it 'o'.
local busy = {}
local pages_left, checked = ` + luaInt(registryCallPages) + `, 0
local function task_page(registry, cursor)
  pages_left = pages_left - 1
  return redis.call('SSCAN', registry, cursor, 'MATCH', '` + judge.TaskKeyPrefix + `*', 'COUNT', ` + luaInt(registryPageSize) + `)
end
local function took_new_task(owner)
  if busy[owner] == nil then
    busy[owner] = false
    local registry = '` + OwnerLocksPrefix + `' .. owner
    if registry_is_set(owner) then
      if redis.call('SCARD', registry) > ` + luaInt(registryCountLimit) + ` then
        -- Too large to count or walk within one call's bound: the reserving
        -- tasks' locks alone decide (took_reserving_task).
        return false
      end
      -- The keys the snapshot saw the registry list, stored for the pass
      -- (RememberSeen); none when the set is missing or not a set.
      local seen = '` + RegistrySeenPrefix + `' .. token .. ':' .. owner
      local seen_stored = token ~= '' and is_set(seen)
      if seen_stored then
        -- Only an acquire adds to a registry. When every key it lists is
        -- one the snapshot saw, nothing was acquired since: one count in
        -- Redis, without walking the registry. SINTERCARD is Redis 7's; on
        -- an older server (or an ACL without it) the walk below decides.
        local common = redis.pcall('SINTERCARD', 2, registry, seen)
        if type(common) == 'number' and common == redis.call('SCARD', registry) then
          return false
        end
      end
      checked = checked + 1
      local out_of_pages = checked == 1 and 'o' or 'b'
      local listed, cursor, stale = 0, '0', {}
      repeat
        local page = task_page(registry, cursor)
        local keys = page[2]
        cursor, listed = page[1], listed + #keys
        if #keys > 0 then
          local known = seen_stored and redis.call('SMISMEMBER', seen, unpack(keys)) or {}
          for j, key in ipairs(keys) do
            -- A task key the snapshot did not see: a new task, or a stale
            -- entry whose key is gone (deleted by a plain DEL), which is
            -- pruned now that the key is gone.
            if known[j] ~= 1 then
              if exists(key) then
                busy[owner] = 'o'
              else
                stale[#stale + 1] = key
              end
            end
          end
        end
      until cursor == '0' or busy[owner] or pages_left <= 0 or listed > ` + luaInt(registryCheckLimit) + `
      if busy[owner] then
        -- A new task: left alone.
      elseif listed > ` + luaInt(registryCheckLimit) + ` then
        -- Too many entries to walk in one call (the reaper prunes a large
        -- registry page by page before it releases): left alone.
        busy[owner] = 'o'
      elseif cursor ~= '0' then
        busy[owner] = out_of_pages
      end
      for from = 1, #stale, 1000 do
        redis.call('SREM', registry, unpack(stale, from, math.min(from + 999, #stale)))
      end
    end
  end
  return busy[owner]
end
-- took_reserving_task says the owner holds the task lock of a task that
-- reserves holding i's resource, one this call has not released.
local function took_reserving_task(i, owner)
  local holders = held_by[KEYS[i]]
  local tasks = holders and holders[owner]
  if tasks == nil then return false end
  for _, key in ipairs(tasks) do
    if not gone[key] then return true end
  end
  return false
end
-- wrong_type says a reply is Redis's WRONGTYPE error: the key holds another
-- kind of value. Any other error (a denied command) fails the script.
local function wrong_type(reply)
  if type(reply) ~= 'table' then return false end
  if string.find(reply.err or '', 'WRONGTYPE', 1, true) == 1 then return true end
  error(reply)
end
-- unlisted holds, per owner in the order they come, the keys its registry
-- loses at the end.
local unlisted, unlisted_owners = {}, {}
for i = 1, n do
  local key, flag, owner = KEYS[i], string.sub(flags, i, i), ARGV[2 + i]
  -- g: already gone, r: released, o: owner changed.
  local res, holds = 'g', false
  if (flag == 'X' or flag == 'S') and took_new_task(owner) then
    res, holds = busy[owner], true
  elseif (flag == 'X' or flag == 'S') and took_reserving_task(i, owner) then
    res, holds = 'o', true
  elseif gone[key] then
    -- Deleted by an earlier holding of this batch: no key.
  elseif flag == 's' or flag == 'S' then
    -- SREM answers 1 for the member removed, 0 for no such member or key.
    local removed = redis.pcall('SREM', key, owner)
    if wrong_type(removed) then
      res = 'o'
    elseif removed == 1 then
      res = 'r'
    end
  else
    -- GET answers the value, false for no key.
    local value = redis.pcall('GET', key)
    if wrong_type(value) then
      res = 'o'
      holds = is_set(key) and redis.call('SISMEMBER', key, owner) == 1
    elseif value == owner then
      gone[key] = true
      dels[#dels + 1] = key
      res = 'r'
    elseif value then
      res = 'o'
    end
  end
  if not holds and registry_is_set(owner) then
    if unlisted[owner] == nil then
      unlisted[owner] = {}
      unlisted_owners[#unlisted_owners + 1] = owner
    end
    local keys = unlisted[owner]
    keys[#keys + 1] = key
  end
  out[i] = res
end
for from = 1, #dels, 1000 do
  redis.call('DEL', unpack(dels, from, math.min(from + 999, #dels)))
end
for _, owner in ipairs(unlisted_owners) do
  local keys = unlisted[owner]
  for from = 1, #keys, 1000 do
    redis.call('SREM', '` + OwnerLocksPrefix + `' .. owner, unpack(keys, from, math.min(from + 999, #keys)))
  end
end
for i = pos + 1, #ARGV do
  -- Redis deletes a set that loses its last member: an empty registry is none.
  local owner = ARGV[i]
  if redis.call('TYPE', '` + OwnerLocksPrefix + `' .. owner)['ok'] == 'none' and is_set('` + ActiveOwnersKey + `') then
    redis.call('SREM', '` + ActiveOwnersKey + `', owner)
  end
end
return table.concat(out)
`)
