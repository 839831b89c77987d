package redislocks_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/heartbeat"
	"github.com/lock-reaper/lock-reaper/internal/testing/testenv"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
	"github.com/lock-reaper/lock-reaper/reaper/redislocks"
)

// TestStoredFormats: what lock-reaper keeps in Redis between passes (the
// suspects, the rows seen alive, the pods seen, the uncommitted writes seen) is written and read in one
// fixed JSON form, defined here, in the package that stores it: a reaper of
// another version, another replica or the next CronJob run reads what this
// one wrote.
func TestStoredFormats(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := testenv.NewRedis(t).Client
	at := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	const ttl, timeout = time.Hour, 5 * time.Second

	require.NoError(t, redislocks.WriteSuspects(ctx, rdb, timeout, ttl, map[judge.SuspectKey]judge.Suspect{
		{Key: "pulp:resource_lock:r", Owner: "1@w"}: {Verdict: judge.VerdictNoTask, FirstSeen: at},
	}))
	require.Equal(t, map[string]string{`["pulp:resource_lock:r","1@w"]`: `{"verdict":"no-task","first_seen":"2026-12-02T10:00:00Z"}`},
		rdb.HGetAll(ctx, redislocks.SuspectsKey).Val())

	require.NoError(t, redislocks.WriteSeenAlive(ctx, rdb, timeout, ttl, map[string]judge.SeenAlive{"row-1": {Name: "1@w", At: at}}))
	require.Equal(t, map[string]string{"row-1": `{"name":"1@w","at":"2026-12-02T10:00:00Z"}`}, rdb.HGetAll(ctx, redislocks.SeenAliveKey).Val())

	require.NoError(t, redislocks.WriteSeenPods(ctx, rdb, timeout, ttl, map[string]redislocks.SeenPod{
		"pulp-worker-0": {SeenPod: heartbeat.SeenPod{UID: "u-1", Seen: at}, Where: "pulp/app=worker"},
	}))
	require.Equal(t, map[string]string{"pulp-worker-0": `{"uid":"u-1","seen":"2026-12-02T10:00:00Z","where":"pulp/app=worker"}`},
		rdb.HGetAll(ctx, redislocks.PodsSeenKey).Val())

	w := judge.OpenWrite{PID: 4242, Transaction: "7/123"}
	require.NoError(t, redislocks.WriteOpenWrites(ctx, rdb, timeout, ttl, map[string]time.Time{redislocks.OpenWriteField(w): at}))
	require.Equal(t, map[string]string{"4242:7/123": `{"first_seen":"2026-12-02T10:00:00Z"}`}, rdb.HGetAll(ctx, redislocks.OpenWritesKey).Val())
	seen, err := redislocks.ReadOpenWrites(ctx, rdb, timeout)
	require.NoError(t, err)
	require.Equal(t, map[string]time.Time{"4242:7/123": at}, seen)

	// Read back, field order and unknown fields aside.
	require.NoError(t, rdb.HSet(ctx, redislocks.SuspectsKey, `["task:t","2@w"]`, `{"first_seen":"2026-12-02T10:00:00Z","verdict":"task-lost","extra":1}`).Err())
	suspects, err := redislocks.ReadSuspects(ctx, rdb, timeout)
	require.NoError(t, err)
	require.Equal(t, judge.Suspect{Verdict: judge.VerdictTaskLost, FirstSeen: at}, suspects[judge.SuspectKey{Key: "task:t", Owner: "2@w"}])
	require.Len(t, suspects, 2)
	alive, err := redislocks.ReadSeenAlive(ctx, rdb, timeout)
	require.NoError(t, err)
	require.Equal(t, map[string]judge.SeenAlive{"row-1": {Name: "1@w", At: at}}, alive)
	pods, err := redislocks.ReadSeenPods(ctx, rdb, timeout)
	require.NoError(t, err)
	require.Equal(t, map[string]redislocks.SeenPod{"pulp-worker-0": {SeenPod: heartbeat.SeenPod{UID: "u-1", Seen: at}, Where: "pulp/app=worker"}}, pods)
}
