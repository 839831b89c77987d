package history_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/internal/sim"
	"github.com/lock-reaper/lock-reaper/internal/testing/testenv"
	"github.com/lock-reaper/lock-reaper/reaper/history"
)

// prefix is a test's own key prefix under the reaper's, so that the ACL's
// key pattern would cover it.
func prefix() string { return history.DefaultPrefix + "test-" + sim.NewUUID() + ":" }

func TestRecordRecentNewestFirst(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := testenv.NewRedis(t).Client
	p := prefix()
	start := time.Date(2025, 3, 1, 7, 50, 0, 0, time.UTC)
	for i := range 3 {
		e := history.Entry{At: start.Add(time.Duration(i) * time.Minute), Mode: "once", Duration: 1500 * time.Millisecond,
			Stale: 10 - i, Released: i, Updated: 1, Guards: []string{"max_releases"}}
		if i == 2 {
			e.Error = "Redis went away"
		}
		require.NoError(t, history.Record(ctx, rdb, p, e))
	}
	got, err := history.Recent(ctx, rdb, p, time.Time{}, 0)
	require.NoError(t, err)
	require.Len(t, got, 3)
	require.Equal(t, start.Add(2*time.Minute), got[0].At, "newest first")
	require.Equal(t, "Redis went away", got[0].Error)
	require.Equal(t, start, got[2].At)
	require.Equal(t, history.Entry{At: start, Mode: "once", Duration: 1500 * time.Millisecond, Stale: 10, Released: 0, Updated: 1,
		Guards: []string{"max_releases"}}, got[2])

	got, err = history.Recent(ctx, rdb, p, time.Time{}, 2)
	require.NoError(t, err)
	require.Len(t, got, 2, "limit")
	got, err = history.Recent(ctx, rdb, p, start.Add(time.Minute), 0)
	require.NoError(t, err)
	require.Len(t, got, 2, "since")

	// The stored form is what redis-cli shows: RFC 3339 and milliseconds.
	raw := rdb.LIndex(ctx, history.Key(p), 0).Val()
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(raw), &m))
	require.Equal(t, "2025-03-01T07:52:00Z", m["time"])
	require.EqualValues(t, 1500, m["duration_ms"])
	require.Equal(t, "once", m["mode"])
}

func TestRecordCapsAndExpires(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := testenv.NewRedis(t).Client
	p := prefix()
	// Fill the list to its cap directly, then record once more.
	old, err := json.Marshal(history.Entry{At: time.Unix(1, 0).UTC(), Mode: "run"})
	require.NoError(t, err)
	fill := make([]any, history.Cap)
	for i := range fill {
		fill[i] = old
	}
	require.NoError(t, rdb.RPush(ctx, history.Key(p), fill...).Err())
	now := time.Now().UTC().Truncate(time.Second)
	require.NoError(t, history.Record(ctx, rdb, p, history.Entry{At: now, Mode: "release", Released: 3}))
	require.EqualValues(t, history.Cap, rdb.LLen(ctx, history.Key(p)).Val(), "capped")
	ttl := rdb.TTL(ctx, history.Key(p)).Val()
	require.Greater(t, ttl, history.TTL-time.Minute, "expiry set")
	require.LessOrEqual(t, ttl, history.TTL)
	got, err := history.Recent(ctx, rdb, p, time.Time{}, 1)
	require.NoError(t, err)
	require.Equal(t, []history.Entry{{At: now, Mode: "release", Released: 3}}, got)
}

func TestRecentSkipsWhatDoesNotDecode(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := testenv.NewRedis(t).Client
	p := prefix()
	require.NoError(t, history.Record(ctx, rdb, p, history.Entry{At: time.Unix(100, 0).UTC(), Mode: "once"}))
	require.NoError(t, rdb.LPush(ctx, history.Key(p), "not json", "{}").Err())
	got, err := history.Recent(ctx, rdb, p, time.Time{}, 0)
	require.NoError(t, err)
	require.Len(t, got, 1)

	none, err := history.Recent(ctx, rdb, prefix(), time.Time{}, 0)
	require.NoError(t, err)
	require.Empty(t, none, "no list, no passes")
}

// foreignEntries pushes n entries of size bytes into the history under p,
// as anyone who may write under the reaper's prefix could: valid JSON,
// dated now, with a long error.
func foreignEntries(t *testing.T, rdb redis.UniversalClient, p string, n, size int) {
	t.Helper()
	b, err := json.Marshal(history.Entry{At: time.Now().UTC(), Mode: "once", Error: strings.Repeat("x", size)})
	require.NoError(t, err)
	for range n {
		require.NoError(t, rdb.LPush(context.Background(), history.Key(p), b).Err())
	}
}

// TestReadSkipsOversizedEntries: sixty entries of 2 MB written by someone
// else among the reaper's own are skipped unread, counted with the largest
// length, and the reaper's own entries still read.
func TestReadSkipsOversizedEntries(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := testenv.NewRedis(t).Client
	p := prefix()
	now := time.Now().UTC().Truncate(time.Second)
	require.NoError(t, history.Record(ctx, rdb, p, history.Entry{At: now.Add(-time.Minute), Mode: "once", Released: 1}))
	foreignEntries(t, rdb, p, 60, 2<<20)
	require.NoError(t, history.Record(ctx, rdb, p, history.Entry{At: now, Mode: "run", Released: 2}))

	got, err := history.Recent(ctx, rdb, p, time.Time{}, 0)
	require.NoError(t, err)
	require.Equal(t, 2, len(got), "only the reaper's own entries")
	require.Equal(t, 2, got[0].Released)
	require.Equal(t, 1, got[1].Released)

	read, err := history.Read(ctx, rdb, p, time.Time{}, 0)
	require.NoError(t, err)
	require.Equal(t, 60, read.Oversized)
	require.Greater(t, read.LargestBytes, int64(2<<20))
	require.Contains(t, read.Skipped(), "60 entries longer than 4096 bytes")
}

// TestReadBoundsTheWhole: entries each under the bound, but together far
// over what one read keeps, are read only up to MaxReadBytes; the rest are
// counted as unread.
func TestReadBoundsTheWhole(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := testenv.NewRedis(t).Client
	p := prefix()
	foreignEntries(t, rdb, p, 1000, 3<<10)
	read, err := history.Read(ctx, rdb, p, time.Time{}, 0)
	require.NoError(t, err)
	require.Zero(t, read.Oversized)
	require.Less(t, len(read.Entries), 1000)
	require.Positive(t, read.Unread)
	require.Equal(t, 1000, len(read.Entries)+read.Unread, "every entry read or counted")
	total := 0
	for _, e := range read.Entries {
		total += len(e.Error)
	}
	require.LessOrEqual(t, total, history.MaxReadBytes)
}

// TestRecordCutsALongError: a pass's own entry with a long error is
// recorded with the error cut, so a reader never skips it as oversized.
func TestRecordCutsALongError(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := testenv.NewRedis(t).Client
	p := prefix()
	require.NoError(t, history.Record(ctx, rdb, p, history.Entry{At: time.Now().UTC(), Mode: "once", Error: strings.Repeat("é", 8<<10)}))
	read, err := history.Read(ctx, rdb, p, time.Time{}, 0)
	require.NoError(t, err)
	require.Zero(t, read.Oversized)
	require.Len(t, read.Entries, 1)
	require.True(t, strings.HasSuffix(read.Entries[0].Error, "é…"), "cut at a rune's start")
	require.Less(t, len(read.Entries[0].Error), 2<<10)
}
