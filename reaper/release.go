package reaper

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// releaseScript compares and releases a batch of holdings atomically.
//
// KEYS: the lock keys, one per holding.
// ARGV: n, then n kinds ("s" for a shared member, "x" for a string lock),
// then n owners, then the owners judged dead or gone that may leave
// pulp:active_owners once their registry is empty.
//
// A string lock is deleted only while its value is still the observed owner;
// a shared set loses only that member. A key leaves the owner's registry once
// the owner no longer holds it. It returns one result per holding.
var releaseScript = redis.NewScript(`
local n = tonumber(ARGV[1])
local out = {}
for i = 1, n do
  local key, kind, owner = KEYS[i], ARGV[1 + i], ARGV[1 + n + i]
  local t = redis.call('TYPE', key)['ok']
  local res, holds = 'already-gone', false
  if kind == 's' then
    if t == 'set' then
      if redis.call('SREM', key, owner) == 1 then res = 'released' end
    elseif t ~= 'none' then
      res = 'owner-changed'
    end
  else
    if t == 'string' then
      if redis.call('GET', key) == owner then
        redis.call('DEL', key)
        res = 'released'
      else
        res = 'owner-changed'
      end
    elseif t == 'set' then
      res = 'owner-changed'
      holds = redis.call('SISMEMBER', key, owner) == 1
    elseif t ~= 'none' then
      res = 'owner-changed'
    end
  end
  if not holds then
    redis.call('SREM', '` + OwnerLocksPrefix + `' .. owner, key)
  end
  out[i] = res
end
for i = 2 + 2 * n, #ARGV do
  local owner = ARGV[i]
  if redis.call('SCARD', '` + OwnerLocksPrefix + `' .. owner) == 0 then
    redis.call('SREM', '` + ActiveOwnersKey + `', owner)
  end
end
return out
`)

// releaser applies the releases of a plan in batches, one Lua call each.
type releaser struct {
	rdb       redis.UniversalClient
	batchSize int
	timeout   time.Duration
}

// releaseBatch releases holdings and returns one Result per holding. retire
// names the owners judged dead or gone in this batch.
func (r *releaser) releaseBatch(ctx context.Context, batch []Holding, retire []string) ([]Result, error) {
	keys := make([]string, len(batch))
	args := make([]any, 0, 1+2*len(batch)+len(retire))
	args = append(args, len(batch))
	for i, h := range batch {
		keys[i] = h.Key
		if h.Kind == KindShared {
			args = append(args, "s")
		} else {
			args = append(args, "x")
		}
	}
	for _, h := range batch {
		args = append(args, h.Owner)
	}
	for _, o := range retire {
		args = append(args, o)
	}
	cctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	raw, err := releaseScript.Run(cctx, r.rdb, keys, args...).StringSlice()
	if err != nil {
		return nil, fmt.Errorf("release batch of %d holdings: %w", len(batch), err)
	}
	if len(raw) != len(batch) {
		return nil, fmt.Errorf("release batch: %d results for %d holdings", len(raw), len(batch))
	}
	out := make([]Result, len(raw))
	for i, s := range raw {
		out[i] = Result(s)
	}
	return out, nil
}
