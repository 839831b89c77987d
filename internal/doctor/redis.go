package doctor

import (
	"context"
	"fmt"
	"strings"
)

// minRedis is the oldest Redis the release script runs on: it calls
// SMISMEMBER, which Redis 6.2 introduced.
var minRedis = version{6, 2}

func checkRedisReachable(ctx context.Context, t Target) Result {
	// INFO, not PING: the documented ACL user may run INFO and not PING.
	server, err := readInfo(ctx, t.Redis, "server")
	switch {
	case isNoPerm(err):
		return Result{Status: Warn, Evidence: "reachable, but INFO was refused, so the version is unknown: " + err.Error(),
			Fix: "allow INFO to the reaper's ACL user (internal/privilege/redis.acl)."}
	case err != nil:
		return Result{Status: Fail, Evidence: "cannot reach Redis: " + err.Error(),
			Fix: "point redis.url at Pulp's Redis (REDIS_URL, or REDIS_HOST/REDIS_PORT/REDIS_DB in Pulp's settings) and check its credentials and TLS settings."}
	}
	return evalRedisVersion(server["redis_version"])
}

// evalRedisVersion judges the server version INFO server reported.
func evalRedisVersion(v string) Result {
	switch parsed := parseVersion(v); {
	case parsed == nil:
		return Result{Status: Warn, Evidence: fmt.Sprintf("reachable, but INFO reported no version (%q)", v),
			Fix: "check that redis.url names a Redis server, not a proxy that hides INFO."}
	case !parsed.atLeast(minRedis):
		return Result{Status: Fail, Evidence: "Redis " + v + " is older than 6.2, which the release script needs (SMISMEMBER)",
			Fix: "upgrade Redis to 6.2 or later (7 for ACL DRYRUN)."}
	}
	return Result{Status: OK, Evidence: "reachable, Redis " + v}
}

func checkRedisEviction(ctx context.Context, t Target) Result {
	mem, err := readInfo(ctx, t.Redis, "memory")
	if err != nil {
		return couldNotCheck("read the eviction policy", err, "allow INFO to the reaper's ACL user (internal/privilege/redis.acl).")
	}
	maxmemory, _ := mem.int("maxmemory")
	used, usedOK := mem.int("used_memory")
	if !usedOK {
		used = -1
	}
	return evalEviction(mem["maxmemory_policy"], maxmemory, used)
}

// headroomWarn is the share of maxmemory in use above which a volatile-*
// policy is close to running out of keys it may evict.
const headroomWarn = 0.9

// evalEviction judges maxmemory-policy. Pulp's locks have no expiry: an
// allkeys-* policy may evict them under memory pressure, and then two tasks
// hold the same exclusive resource. A volatile-* policy evicts only keys with
// an expiry (the content cache), so the locks stay; but once nothing volatile
// is left, writes fail like noeviction, so it needs headroom data to be
// judged. used is -1 when unknown.
func evalEviction(policy string, maxmemory, used int64) Result {
	limit := "no maxmemory"
	if maxmemory > 0 {
		limit = fmt.Sprintf("maxmemory %d bytes", maxmemory)
		if used >= 0 {
			limit += fmt.Sprintf(", %d used (%.0f%%)", used, 100*float64(used)/float64(maxmemory))
		}
	}
	evidence := fmt.Sprintf("maxmemory-policy %s, %s", policy, limit)
	switch {
	case policy == "":
		return Result{Status: Warn, Evidence: "INFO memory reported no maxmemory_policy",
			Fix: "set maxmemory-policy noeviction (or volatile-lru) on Pulp's Redis."}
	case strings.HasPrefix(policy, "allkeys-"):
		return Result{Status: Fail, Evidence: evidence + ": Redis may evict lock keys, which have no expiry",
			Fix: "set maxmemory-policy noeviction (or volatile-lru, so that only the content cache's expiring keys are evicted)."}
	case strings.HasPrefix(policy, "volatile-"):
		switch {
		case maxmemory <= 0:
			return Result{Status: Warn, Evidence: evidence + ": no headroom data; a memory limit outside Redis (a container's) kills it, and every lock with it, before the policy applies",
				Fix: "set maxmemory below the container's memory limit so the policy can evict the cache's expiring keys first."}
		case used < 0:
			return Result{Status: Warn, Evidence: evidence + ": used_memory unknown, so the headroom cannot be judged",
				Fix: "check used_memory against maxmemory; at the limit with nothing volatile left, lock writes fail."}
		case float64(used) >= headroomWarn*float64(maxmemory):
			return Result{Status: Warn, Evidence: evidence + ": little headroom; once no expiring key is left to evict, lock writes fail",
				Fix: "raise maxmemory or give Pulp's content cache a Redis of its own."}
		}
	}
	return Result{Status: OK, Evidence: evidence + ": lock keys are never evicted"}
}

func checkRedisPersistence(ctx context.Context, t Target) Result {
	p, err := readInfo(ctx, t.Redis, "persistence")
	if err != nil {
		return couldNotCheck("read INFO persistence", err, "allow INFO to the reaper's ACL user (internal/privilege/redis.acl).")
	}
	// CONFIG GET save tells whether RDB save points are set; the reaper's
	// ACL user may not run it (CONFIG GET can read secrets), and then INFO's
	// save history has to do.
	savePoints, known := "", false
	if v, err := t.Redis.ConfigGet(ctx, "save").Result(); err == nil {
		savePoints, known = v["save"], true
	}
	return evalPersistence(p, savePoints, known)
}

// evalPersistence judges INFO persistence. A Redis that neither appends to
// an AOF nor saves RDB snapshots loses every lock on restart or failover
// while the tasks that held them keep running.
func evalPersistence(p info, savePoints string, savePointsKnown bool) Result {
	aof := p["aof_enabled"] == "1"
	bgsaveSecs, _ := p.int("rdb_last_bgsave_time_sec")
	saves, _ := p.int("rdb_saves")
	rdbSaved := bgsaveSecs >= 0 || saves > 0
	rdb := rdbSaved
	rdbText := "no RDB save since start"
	switch {
	case savePointsKnown && strings.TrimSpace(savePoints) != "":
		rdb, rdbText = true, "RDB save points "+strings.TrimSpace(savePoints)
	case savePointsKnown:
		rdb, rdbText = false, "no RDB save points"
	case rdbSaved:
		rdbText = "RDB has saved since start"
	}
	aofText := "AOF off"
	if aof {
		aofText = "AOF on"
	}
	evidence := aofText + ", " + rdbText
	switch {
	case p["aof_last_write_status"] == "err" || p["rdb_last_bgsave_status"] == "err":
		return Result{Status: Warn, Evidence: evidence + "; the last AOF write or RDB save failed",
			Fix: "check Redis's log and disk: persistence is failing."}
	case !aof && !rdb && !savePointsKnown:
		return Result{Status: Warn, Evidence: evidence + " (save points unknown: CONFIG GET refused); a restart may lose every lock while tasks keep running",
			Fix: "turn on appendonly yes (or RDB save points) on Pulp's Redis."}
	case !aof && !rdb:
		return Result{Status: Warn, Evidence: evidence + ": a restart or failover loses every lock while tasks keep running",
			Fix: "turn on appendonly yes (or RDB save points) on Pulp's Redis."}
	}
	return Result{Status: OK, Evidence: evidence}
}

func checkRedisRole(ctx context.Context, t Target) Result {
	role, err := t.Redis.Do(ctx, "ROLE").Slice()
	if err != nil {
		return couldNotCheck("run ROLE", err, "allow ROLE to the reaper's ACL user (internal/privilege/redis.acl).")
	}
	return evalRole(role)
}

// evalRole judges ROLE's reply. On a replica the reaper reads locks that may
// lag the primary's and its writes fail (READONLY); worse, Pulp's API and
// workers may be pointed at different servers.
func evalRole(role []any) Result {
	if len(role) == 0 {
		return Result{Status: Warn, Evidence: "ROLE returned nothing", Fix: "check that redis.url names a Redis server."}
	}
	kind := fmt.Sprint(role[0])
	switch kind {
	case "master":
		replicas := 0
		if len(role) > 2 {
			if list, ok := role[2].([]any); ok {
				replicas = len(list)
			}
		}
		return Result{Status: OK, Evidence: fmt.Sprintf("primary with %d connected replicas", replicas)}
	case "slave":
		where, link := "unknown", "unknown"
		if len(role) > 3 {
			where = fmt.Sprintf("%v:%v", role[1], role[2])
			link = fmt.Sprint(role[3])
		}
		return Result{Status: Fail, Evidence: fmt.Sprintf("replica of %s (link %s): lock writes fail and its locks may lag the primary's", where, link),
			Fix: fmt.Sprintf("point redis.url at the primary %s (or at Sentinel with redis+sentinel://), the same Redis Pulp's API and workers use.", where)}
	case "sentinel":
		return Result{Status: Fail, Evidence: "redis.url names a Sentinel, not a data server",
			Fix: "use redis+sentinel://host:26379/0?master_name=NAME so the reaper asks Sentinel for the primary."}
	}
	return Result{Status: Warn, Evidence: "unknown role " + kind, Fix: "check that redis.url names Pulp's Redis primary."}
}
