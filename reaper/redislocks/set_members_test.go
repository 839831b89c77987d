package redislocks_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/internal/redisserver"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
	"github.com/lock-reaper/lock-reaper/reaper/redislocks"
)

// TestReadSetsWithoutTheMemberScript: a Redis user that may not run
// scripts reads shared locks as before the member script: a set whose
// members average more than 2 KiB is reported whole, unread, a set of
// owner names read with SSCAN, and one warning names what to allow. The
// same sets read by a user that may run it give the junk member alone.
func TestReadSetsWithoutTheMemberScript(t *testing.T) {
	t.Parallel()
	srv := redisserver.Start(t)
	ctx := context.Background()
	junk, names := judge.ResourceKeyPrefix+"junk", judge.ResourceKeyPrefix+"names"
	require.NoError(t, srv.Client.SAdd(ctx, junk, strings.Repeat("j", 8<<10), "1@dead").Err())
	require.NoError(t, srv.Client.SAdd(ctx, names, "1@a", "2@b").Err())
	require.NoError(t, srv.Client.Do(ctx, "ACL", "SETUSER", "noscript", "on", ">pw", "~*", "+@all", "-eval", "-evalsha").Err())

	read := func(user string) (redislocks.Snapshot, string) {
		t.Helper()
		opts := &redis.Options{Addr: srv.Addr}
		if user != "" {
			opts.Username, opts.Password = user, "pw"
		}
		rdb := redis.NewClient(opts)
		t.Cleanup(func() { _ = rdb.Close() })
		var logs bytes.Buffer
		rr := &redislocks.Reader{RDB: rdb, ScanCount: 100, BatchSize: 50, Timeout: 10 * time.Second,
			Log: slog.New(slog.NewTextHandler(&logs, nil))}
		snap, err := rr.Read(ctx, true)
		require.NoError(t, err)
		return snap, logs.String()
	}
	owners := func(snap redislocks.Snapshot) map[string][]string {
		out := map[string][]string{}
		for _, h := range snap.Holdings {
			out[h.Key] = append(out[h.Key], h.Owner)
		}
		return out
	}

	snap, logs := read("noscript")
	require.Equal(t, map[string][]string{names: {"1@a", "2@b"}}, owners(snap))
	require.Len(t, snap.Ignored, 1)
	require.Equal(t, junk, snap.Ignored[0].Key)
	require.Contains(t, snap.Ignored[0].Reason, "set of 2 members taking")
	require.Equal(t, 1, strings.Count(logs, "may not run the script that reads shared locks' members"), logs)

	snap, logs = read("")
	require.Equal(t, map[string][]string{names: {"1@a", "2@b"}, junk: {"1@dead"}}, owners(snap))
	require.Equal(t, []redislocks.Ignored{{Key: junk, Type: "set", Reason: "member of 8192 bytes, not read: an owner name is at most 1024 bytes"}}, snap.Ignored)
	require.Empty(t, logs)
}
