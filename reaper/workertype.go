package reaper

import (
	"fmt"
	"time"

	"github.com/lock-reaper/lock-reaper/heartbeat"
	"github.com/lock-reaper/lock-reaper/reaper/redislocks"
)

// WorkerTypeFix says where the worker type is set, for doctor and audit alike.
const WorkerTypeFix = `if Pulp should run the Redis worker, set WORKER_TYPE = "redis" in Pulp's settings ` +
	`(PULP_WORKER_TYPE=redis in every Pulp process's environment, API servers included, as they dispatch the tasks; ` +
	`with pulp-operator: a key WORKER_TYPE with the value "redis", quotes included, in the ConfigMap that the Pulp CR's ` +
	`spec.custom_pulp_settings names, and spec.cache.enabled: true, since the Redis worker needs REDIS_HOST); ` +
	`if Pulp runs pulpcore's own worker, lock-reaper has nothing to do.`

// WorkerTypeNote says, when Pulp's workers heartbeat but Redis holds no
// trace of the Redis worker (no task or resource lock, no owner in
// pulp:active_owners), that Pulp most likely runs pulpcore's default worker:
// WORKER_TYPE defaults to "pulpcore" (pulpcore/app/settings.py), whose
// locks are PostgreSQL advisory locks that lock-reaper neither reads nor
// needs to release, and pulp-operator sets no WORKER_TYPE of its own. A
// Redis worker adds itself to pulp:active_owners at its first lock and
// stays there until it is cleaned up after its death, so an empty set beside
// live workers means none of them ever took a Redis lock. "" when there is
// nothing to say.
func WorkerTypeNote(holdings, activeOwners int, rows []heartbeat.AppStatus, now time.Time) string {
	if holdings > 0 || activeOwners > 0 {
		return ""
	}
	workers := 0
	for _, r := range rows {
		if r.AppType == "worker" && r.Liveness(now, 0) >= heartbeat.Late {
			workers++
		}
	}
	if workers == 0 {
		return ""
	}
	return fmt.Sprintf("%d Pulp workers heartbeat in core_appstatus, but Redis holds no Redis-worker lock and %s lists no owner: "+
		"Pulp most likely runs pulpcore's default worker (WORKER_TYPE \"pulpcore\", PostgreSQL advisory locks), "+
		"which lock-reaper does not watch; unless no task has run since the workers started, it finds nothing to do",
		workers, redislocks.ActiveOwnersKey)
}
