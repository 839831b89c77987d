package doctor

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/lock-reaper/lock-reaper/reaper/judge"
	"github.com/lock-reaper/lock-reaper/reaper/redislocks"
)

// DefaultSampleKeys bounds the keyspace sample: enough to see what shares
// the database, little enough to cost nothing on a large cache.
const DefaultSampleKeys = 10000

// Classes of sampled keys.
const (
	classLock   = "lock"   // Pulp's locks and owner registry
	classPulp   = "pulp"   // other pulp: keys (cancel signals, the reaper's suspects, throttles)
	classCache  = "cache"  // Pulp's content cache (PULP_CACHE, or a distribution's base path)
	classOthers = "others" // anything else
)

// classifyKey sorts a key name by who writes it. pulpcore's content cache
// (pulpcore/cache/cache.py) keeps one hash per distribution base path,
// named after the path itself ("<domain>:<base_path>" with domains) or
// PULP_CACHE, so a cache key has no prefix of its own: any key outside
// Pulp's pulp: and task: names counts as cache, unless it looks like
// another application's (a name without '/' or ':' is counted as others).
func classifyKey(key string) string {
	switch {
	case strings.HasPrefix(key, judge.TaskKeyPrefix), strings.HasPrefix(key, judge.ResourceKeyPrefix),
		strings.HasPrefix(key, redislocks.OwnerLocksPrefix), key == redislocks.ActiveOwnersKey:
		return classLock
	case strings.HasPrefix(key, "pulp:"):
		return classPulp
	case key == "PULP_CACHE", strings.Contains(key, "/"), strings.Contains(key, ":"):
		return classCache
	}
	return classOthers
}

// keyPrefix is the part of a key that groups it in the evidence: up to and
// including its second ':' for pulp: keys, its first ':' or '/' otherwise.
func keyPrefix(key string) string {
	if rest, ok := strings.CutPrefix(key, "pulp:"); ok {
		if i := strings.IndexByte(rest, ':'); i >= 0 {
			return "pulp:" + rest[:i+1]
		}
		return key
	}
	if i := strings.IndexAny(key, ":/"); i >= 0 {
		return key[:i+1]
	}
	return key
}

// keySample counts sampled keys by class and by prefix.
type keySample struct {
	total    int
	complete bool // the SCAN reached the end of the keyspace
	byClass  map[string]int
	byPrefix map[string]int
}

func newKeySample() *keySample {
	return &keySample{byClass: map[string]int{}, byPrefix: map[string]int{}}
}

func (s *keySample) add(key string) {
	s.total++
	s.byClass[classifyKey(key)]++
	s.byPrefix[keyPrefix(key)]++
}

func checkSharedKeyspace(ctx context.Context, t Target) Result {
	sample := newKeySample()
	var cursor uint64
	for sample.total < t.SampleKeys {
		keys, next, err := t.Redis.Scan(ctx, cursor, "", 1000).Result()
		if err != nil {
			return couldNotCheck("sample the keyspace with SCAN", err, "allow SCAN to the reaper's ACL user (internal/privilege/redis.acl).")
		}
		for _, k := range keys {
			sample.add(k)
		}
		if cursor = next; cursor == 0 {
			sample.complete = true
			break
		}
	}
	return evalSharedKeyspace(sample)
}

// evalSharedKeyspace judges a keyspace sample. Pulp's content cache lives
// in the same Redis database as the locks (both use REDIS_URL/REDIS_DB), so
// under memory pressure the cache competes with the locks: with an
// allkeys-* policy locks are evicted, with noeviction lock writes fail.
// Another Redis database number does not help: memory and eviction are per
// server.
func evalSharedKeyspace(s *keySample) Result {
	scope := fmt.Sprintf("%d keys sampled", s.total)
	if s.complete {
		scope = fmt.Sprintf("all %d keys", s.total)
	}
	locks, others := s.byClass[classLock], s.total-s.byClass[classLock]-s.byClass[classPulp]
	evidence := fmt.Sprintf("%s: %d lock keys, %d pulp: keys, %d cache keys, %d others", scope, locks, s.byClass[classPulp], s.byClass[classCache], s.byClass[classOthers])
	if others > 0 {
		evidence += "; top prefixes " + topPrefixes(s.byPrefix, 5)
	}
	if locks > 0 && others > 0 {
		return Result{Status: Warn, Evidence: evidence + ": the locks share a database (and the server's memory) with other keys",
			Fix: "give Pulp's content cache (or the other application) a Redis server of its own, or keep maxmemory-policy noeviction/volatile-* with headroom."}
	}
	return Result{Status: OK, Evidence: evidence}
}

// topPrefixes lists the n most frequent prefixes with their counts.
func topPrefixes(byPrefix map[string]int, n int) string {
	type pc struct {
		prefix string
		count  int
	}
	var all []pc
	for p, c := range byPrefix {
		all = append(all, pc{p, c})
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].count != all[j].count {
			return all[i].count > all[j].count
		}
		return all[i].prefix < all[j].prefix
	})
	var parts []string
	for i, p := range all {
		if i == n {
			break
		}
		parts = append(parts, fmt.Sprintf("%q %d", p.prefix, p.count))
	}
	return strings.Join(parts, ", ")
}
