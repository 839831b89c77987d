package reaper_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/internal/sim"
	"github.com/lock-reaper/lock-reaper/internal/testing/testenv"
	"github.com/lock-reaper/lock-reaper/reaper"
)

// TestACLMissingACommandChangesNothing: the Redis user lacks one command
// the release needs (GET, DEL, SREM, SCARD). Before, the script failed
// halfway, without naming the command, and without DEL or SCARD a
// membership was removed while the report said failed. Now the release
// asks Redis first whether it may run each command it calls: the pass
// fails naming the refused command and the fix, and Redis holds every lock
// it held.
func TestACLMissingACommandChangesNothing(t *testing.T) {
	t.Parallel()
	for _, cmd := range []string{"get", "del", "srem", "scard"} {
		t.Run(cmd, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			r, inc, code, rep, stderr := onceWithout(t, "-"+cmd)
			require.NotZero(t, code, stderr)
			require.Contains(t, rep.Error, "may not run "+strings.ToUpper(cmd))
			require.Contains(t, rep.Error, "nothing was changed")
			holdings, _ := sfResults(&rep)
			require.Equal(t, map[reaper.Result]int{reaper.ResultFailed: len(inc.Stale)}, holdings)
			for _, h := range append(inc.Stale, inc.Healthy...) {
				typ := r.Client.Type(ctx, h.Key).Val()
				switch typ {
				case "string":
					require.Equal(t, h.Owner, r.Client.Get(ctx, h.Key).Val(), h.Key)
				case "set":
					require.True(t, r.Client.SIsMember(ctx, h.Key, h.Owner).Val(), "%s lost %s", h.Key, h.Owner)
				default:
					t.Fatalf("%s is gone", h.Key)
				}
			}
		})
	}
}

// TestACLWithoutSizeChecksReadsAsBefore: a Redis user made for an earlier
// version, without +strlen and +memory|usage, still passes: values and
// shared locks' members are read without their size checked first, each
// with one warning naming the rule to add, and the verdicts are those the
// documented user gets.
func TestACLWithoutSizeChecksReadsAsBefore(t *testing.T) {
	t.Parallel()
	_, inc, code, rep, stderr := onceWithout(t, "-strlen", "-memory|usage")
	require.Zero(t, code, stderr)
	holdings, _ := sfResults(&rep)
	require.Equal(t, map[reaper.Result]int{reaper.ResultReleased: len(inc.Stale)}, holdings)
	for _, rule := range []string{"add +strlen to its ACL", "add +memory|usage to its ACL"} {
		require.Equal(t, 1, strings.Count(stderr, rule), "one warning naming %s:\n%s", rule, stderr)
	}
}

// onceWithout builds a small incident, takes the ACL rules off the
// documented Redis user, and runs `once --output json` as that user.
func onceWithout(t *testing.T, rules ...string) (r *testenv.Redis, inc *sim.Incident, code int, rep reaper.Report, stderr string) {
	t.Helper()
	ctx := context.Background()
	r, db := testenv.NewRedis(t), testenv.NewDatabase(t)
	spec := sim.IncidentSpec{DeadTaskLocks: 6, DeadResourceLocks: 4, DeadRunning: 2, LiveWorkers: 2}
	inc, err := sim.BuildIncident(ctx, r.Client, db.Pool, spec)
	require.NoError(t, err)
	p := pvRestrict(t, r, db)
	require.NoError(t, r.Client.Do(ctx, append([]any{"ACL", "SETUSER", p.user}, anys(rules)...)...).Err())
	env := map[string]string{"REAPER_REDIS_URL": p.redisURL, "REAPER_DATABASE_URL": p.database, "REAPER_LOG_FORMAT": "json"}
	code, stdout, stderr := pvRun(t, env, "once", "--output", "json")
	require.NoError(t, json.Unmarshal([]byte(stdout), &rep), stdout)
	return r, inc, code, rep, stderr
}

func anys(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// TestACLWithoutInfoNotesFailoversGoUnnoticed: a Redis user without +info
// cannot tell which primary it talks to. The pass does its work as before
// and says that a failover would go unnoticed, and what to allow.
func TestACLWithoutInfoNotesFailoversGoUnnoticed(t *testing.T) {
	t.Parallel()
	_, inc, code, rep, stderr := onceWithout(t, "-info")
	require.Zero(t, code, stderr)
	holdings, _ := sfResults(&rep)
	require.Equal(t, map[reaper.Result]int{reaper.ResultReleased: len(inc.Stale)}, holdings)
	require.Contains(t, strings.Join(rep.Notes, "\n"), "a failover under or between passes goes unnoticed")
	require.Contains(t, strings.Join(rep.Notes, "\n"), "Allow +info")
	require.Nil(t, rep.SignalCheck)
}
