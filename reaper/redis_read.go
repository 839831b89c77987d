package reaper

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/lock-reaper/lock-reaper/judge"
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
	// log, when set, is told once that values are read without MGET.
	log *slog.Logger
	// noMGET is set once Redis refused MGET to this user.
	noMGET bool
}

// redisSnapshot is what one read of Redis found.
type redisSnapshot struct {
	holdings []judge.Holding
	ignored  []judge.Ignored
	keys     int
	// activeOwners counts the owners pulp:active_owners lists.
	activeOwners int
}

// read collects candidate keys from the owner registry and, on a full scan,
// from a keyspace SCAN that also finds legacy (unregistered) locks, and reads
// their values in pipelined batches.
//
// Redis does the work of a pass while the SCAN walks the keyspace: the walk
// starts while the registry is read, on a connection of its own, and sends
// on the lock keys of each page at once, so that the next SCAN call does
// not wait for them to be looked up; the registered keys are read, then the
// legacy keys the walk finds as they come, in the gaps between SCAN calls.
// Every key is read once, and every read still happens before the database
// is read.
func (rr *redisReader) read(ctx context.Context, fullScan bool) (redisSnapshot, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// The first failure stops the other side; its error is the one reported.
	var first error
	var once sync.Once
	fail := func(err error) {
		once.Do(func() { first = err; cancel() })
	}
	registry := make(chan *ownerRegistry, 1)
	legacy := make(chan []string, 2)
	var wg sync.WaitGroup
	if fullScan {
		pages := make(chan []string, scanPages)
		wg.Add(2)
		go func() {
			defer wg.Done()
			defer close(pages)
			if err := rr.walk(ctx, pages); err != nil {
				fail(err)
			}
		}()
		go func() {
			defer wg.Done()
			defer close(legacy)
			if err := rr.sift(ctx, registry, pages, legacy); err != nil {
				fail(err)
			}
		}()
	} else {
		close(legacy)
	}
	var snap redisSnapshot
	if reg, err := rr.readRegistry(ctx); err != nil {
		fail(err)
	} else {
		registry <- reg
		snap.activeOwners = len(reg.owners)
		snap.holdings = make([]judge.Holding, 0, reg.size())
		if err := rr.readKeys(ctx, reg, legacy, &snap); err != nil {
			fail(err)
		}
	}
	wg.Wait()
	if first != nil {
		return redisSnapshot{}, first
	}
	// The holdings outlive the read: legacy keys found by the walk may have
	// grown them to twice what they hold.
	if len(snap.holdings) < cap(snap.holdings)-cap(snap.holdings)/8 {
		snap.holdings = slices.Clone(snap.holdings)
	}
	// Keys are read in no particular order; the report lists what it ignored
	// by key, members of one set in their order.
	slices.SortStableFunc(snap.ignored, func(a, b judge.Ignored) int { return strings.Compare(a.Key, b.Key) })
	return snap, nil
}

// readKeys reads the registered keys, then the legacy keys the walk sends,
// batch by batch. The holdings are in no particular order: the judge walks
// them in its own.
func (rr *redisReader) readKeys(ctx context.Context, reg *ownerRegistry, legacy <-chan []string, snap *redisSnapshot) error {
	read := func(batch []string) error {
		if err := rr.readBatch(ctx, batch, reg, snap); err != nil {
			return err
		}
		snap.keys += len(batch)
		if rr.progress != nil {
			rr.progress(snap.keys)
		}
		return nil
	}
	registered := reg.lockKeys()
	for start := 0; start < len(registered); start += rr.batchSize {
		if err := read(registered[start:min(start+rr.batchSize, len(registered))]); err != nil {
			return err
		}
	}
	for batch := range legacy {
		if err := read(batch); err != nil {
			return err
		}
	}
	return nil
}

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
func (rr *redisReader) readRegistry(ctx context.Context) (*ownerRegistry, error) {
	owners, err := rr.readSet(ctx, ActiveOwnersKey)
	if err != nil && !isWrongType(err) {
		return nil, fmt.Errorf("read %s: %w", ActiveOwnersKey, err)
	}
	sort.Strings(owners)
	var reg *ownerRegistry
	for start := 0; start < len(owners); start += rr.batchSize {
		batch := owners[start:min(start+rr.batchSize, len(owners))]
		cctx, cancel := context.WithTimeout(ctx, rr.timeout)
		pipe := rr.rdb.Pipeline()
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
				cctx, cancel := context.WithTimeout(ctx, rr.timeout)
				keys, cursor, err = rr.rdb.SScan(cctx, OwnerLocksPrefix+o, cursor, "", registryPageSize).Result()
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
func (rr *redisReader) readSet(ctx context.Context, key string) ([]string, error) {
	var out []string
	var seen map[string]bool
	var cursor uint64
	for {
		cctx, cancel := context.WithTimeout(ctx, rr.timeout)
		page, next, err := rr.rdb.SScan(cctx, key, cursor, "", registryPageSize).Result()
		cancel()
		if err != nil {
			return nil, err
		}
		if cursor == 0 && next == 0 {
			// One page, as SSCAN answers a small set: no duplicates.
			return page, nil
		}
		if seen == nil {
			seen = map[string]bool{}
		}
		for _, m := range page {
			if !seen[m] {
				seen[m] = true
				out = append(out, m)
			}
		}
		if next == 0 {
			return out, nil
		}
		cursor = next
	}
}

func isLockKeyName(k string) bool {
	return strings.HasPrefix(k, judge.TaskKeyPrefix) || strings.HasPrefix(k, judge.ResourceKeyPrefix)
}

// scanPages is how many pages of lock keys the walk may run ahead of the
// registry being read and of the keys being looked up.
const scanPages = 256

// walk runs SCAN over the whole keyspace and sends the lock keys of each page.
func (rr *redisReader) walk(ctx context.Context, pages chan<- []string) error {
	var cursor uint64
	for {
		cctx, cancel := context.WithTimeout(ctx, rr.timeout)
		keys, next, err := rr.rdb.Scan(cctx, cursor, ScanMatch, int64(rr.scanCount)).Result()
		cancel()
		if err != nil {
			return fmt.Errorf("scan keyspace: %w", err)
		}
		page := keys[:0]
		for _, k := range keys {
			if isLockKeyName(k) {
				page = append(page, k)
			}
		}
		if len(page) > 0 {
			select {
			case pages <- page:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		if next == 0 {
			return nil
		}
		cursor = next
	}
}

// sift sends on, in batches, the lock keys the walk found that the registry
// does not list: they were read with the registered ones. SCAN may return a
// key twice; it is sent once.
func (rr *redisReader) sift(ctx context.Context, registry <-chan *ownerRegistry, pages <-chan []string, out chan<- []string) error {
	var reg *ownerRegistry
	select {
	case reg = <-registry:
	case <-ctx.Done():
		return ctx.Err()
	}
	seen := map[string]struct{}{}
	var batch []string
	send := func() error {
		select {
		case out <- batch:
			batch = nil
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	for page := range pages {
		for _, k := range page {
			if reg.has(k) {
				continue
			}
			if _, dup := seen[k]; dup {
				continue
			}
			seen[k] = struct{}{}
			if batch = append(batch, k); len(batch) == rr.batchSize {
				if err := send(); err != nil {
					return err
				}
			}
		}
	}
	if len(batch) == 0 {
		return nil
	}
	return send()
}

// readBatch reads the value of each key in one round trip: a string lock
// answers with its owner; a key released since it was listed, or holding
// something else (a shared lock's set, or no lock at all), with nil. Only
// those get their type and members read, in a second round trip.
//
// The values come from one MGET per batch rather than a GET per key: a
// fleet's locks are nearly all strings, and one command a batch spares the
// reaper building and decoding a command for each key (Redis's own work
// hardly changes: the SCAN is most of it). A user whose ACL predates +mget
// is read with pipelined GETs instead (the pass warns once).
func (rr *redisReader) readBatch(ctx context.Context, keys []string, reg *ownerRegistry, snap *redisSnapshot) error {
	cctx, cancel := context.WithTimeout(ctx, rr.timeout)
	defer cancel()
	values, err := rr.values(cctx, keys)
	if err != nil {
		return err
	}
	var others []string
	for i, k := range keys {
		if values[i] == nil {
			others = append(others, k)
			continue
		}
		snap.addString(k, reg.intern(*values[i]), reg)
	}
	return rr.readOthers(ctx, others, reg, snap)
}

// values reads each key's string value, nil where it holds none.
func (rr *redisReader) values(ctx context.Context, keys []string) ([]*string, error) {
	out := make([]*string, len(keys))
	if !rr.noMGET {
		vals, err := rr.rdb.MGet(ctx, keys...).Result()
		switch {
		case err == nil:
			strs := make([]string, len(vals))
			for i, v := range vals {
				if s, ok := v.(string); ok {
					strs[i] = s
					out[i] = &strs[i]
				}
			}
			return out, nil
		case !isNoPerm(err):
			return nil, fmt.Errorf("read lock keys: %w", err)
		}
		rr.noMGET = true
		if rr.log != nil {
			rr.log.Warn("the Redis user may not run MGET: lock values are read one GET each, which costs Redis about twice the work; add +mget to its ACL (README, Redis ACL)",
				slog.String("error", err.Error()))
		}
	}
	pipe := rr.rdb.Pipeline()
	cmds := make([]*redis.StringCmd, len(keys))
	for i, k := range keys {
		cmds[i] = pipe.Get(ctx, k)
	}
	if _, err := pipe.Exec(ctx); err != nil && !isWrongType(err) && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("read lock keys: %w", err)
	}
	for i, k := range keys {
		v, err := cmds[i].Result()
		switch {
		case err == nil:
			out[i] = &v
		case errors.Is(err, redis.Nil), isWrongType(err):
			// Released since it was listed, or no string: looked at again.
		default:
			return nil, fmt.Errorf("read %q: %w", k, err)
		}
	}
	return out, nil
}

// isNoPerm says Redis refused a command the user's ACL does not allow.
func isNoPerm(err error) bool {
	return err != nil && strings.HasPrefix(err.Error(), "NOPERM")
}

// readOthers reads the type of each key that holds no string, with the
// members of the sets among them. SMEMBERS of a key that is no set answers
// WRONGTYPE, which the type explains.
func (rr *redisReader) readOthers(ctx context.Context, keys []string, reg *ownerRegistry, snap *redisSnapshot) error {
	if len(keys) == 0 {
		return nil
	}
	cctx, cancel := context.WithTimeout(ctx, rr.timeout)
	defer cancel()
	pipe := rr.rdb.Pipeline()
	types := make([]*redis.StatusCmd, len(keys))
	members := make([]*redis.StringSliceCmd, len(keys))
	for i, k := range keys {
		types[i] = pipe.Type(cctx, k)
		members[i] = pipe.SMembers(cctx, k)
	}
	if _, err := pipe.Exec(cctx); err != nil && !isWrongType(err) {
		return fmt.Errorf("read shared locks: %w", err)
	}
	for i, k := range keys {
		typ, err := types[i].Result()
		if err != nil {
			return fmt.Errorf("read type of %q: %w", k, err)
		}
		switch typ {
		case "none", "string":
			// Changed since its value was read; the next pass sees what it
			// became.
		case "set":
			if _, ok := ParseResourceKey(k); !ok {
				snap.ignore(k, typ, "task lock is a set; a task lock is a string")
				continue
			}
			ms, err := members[i].Result()
			if isWrongType(err) {
				// No longer a set; the next pass sees what it became.
				continue
			}
			if err != nil {
				return fmt.Errorf("read members of %q: %w", k, err)
			}
			snap.addMembers(k, ms, reg)
		default:
			snap.ignore(k, typ, "lock key of type "+typ+"; Pulp writes strings and sets")
		}
	}
	return nil
}

func (s *redisSnapshot) addMembers(key string, members []string, reg *ownerRegistry) {
	sort.Strings(members)
	for _, m := range members {
		if problem := OwnerProblem(m); problem != "" {
			s.ignore(key, "set", "member "+quoteShort(m)+": "+problem)
			continue
		}
		m = reg.intern(m)
		s.holdings = append(s.holdings, judge.Holding{Key: key, Kind: judge.KindShared, Owner: m, Registered: reg.registered(key, m)})
	}
}

func (s *redisSnapshot) addString(key, value string, reg *ownerRegistry) {
	if problem := OwnerProblem(value); problem != "" {
		s.ignore(key, "string", "value "+quoteShort(value)+": "+problem)
		return
	}
	if _, ok := ParseTaskKey(key); ok {
		s.holdings = append(s.holdings, judge.Holding{Key: key, Kind: judge.KindTask, Owner: value, Registered: reg.registered(key, value)})
		return
	}
	if strings.HasPrefix(key, judge.TaskKeyPrefix) {
		s.ignore(key, "string", "task key without a canonical lowercase task UUID")
		return
	}
	if _, ok := ParseResourceKey(key); ok {
		s.holdings = append(s.holdings, judge.Holding{Key: key, Kind: judge.KindExclusive, Owner: value, Registered: reg.registered(key, value)})
		return
	}
	s.ignore(key, "string", "resource lock key without a resource name")
}

func (s *redisSnapshot) ignore(key, typ, reason string) {
	s.ignored = append(s.ignored, judge.Ignored{Key: key, Type: typ, Reason: reason})
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
