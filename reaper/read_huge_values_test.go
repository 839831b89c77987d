package reaper_test

import (
	"context"
	"net"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/internal/sim"
	"github.com/lock-reaper/lock-reaper/internal/testing/passtest"
	"github.com/lock-reaper/lock-reaper/reaper"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
	"github.com/lock-reaper/lock-reaper/reaper/redislocks"
)

// countingConn counts the bytes a client reads from Redis.
type countingConn struct {
	net.Conn
	read *atomic.Int64
}

func (c countingConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.read.Add(int64(n))
	return n, err
}

// TestBadInputHugeValuesNotRead: 300 values of 1 MiB under the lock key
// names, some listed in a live owner's registry, beside a fleet's real
// locks. With the default batch size and Redis deadline, an audit and then a
// real pass complete, report each huge value as ignored without reading it
// (the client reads a small part of the 300 MiB), judge the real locks as
// without them, and leave the huge values as they were.
func TestBadInputHugeValuesNotRead(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	fl := f.buildFleet(3)
	ctx, rdb := f.Ctx, f.Redis.Client
	const huge, size = 300, 1 << 20
	value := strings.Repeat("w", size)
	var keys []string
	for i := range huge {
		k := judge.TaskKeyPrefix + sim.NewUUID()
		if i%2 == 1 {
			k = judge.ResourceKeyPrefix + repo()
		}
		keys = append(keys, k)
	}
	for start := 0; start < huge; start += 10 {
		_, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, k := range keys[start : start+10] {
				p.Set(ctx, k, value, 0)
			}
			return nil
		})
		require.NoError(t, err)
	}
	registered := make([]any, 0, 20)
	for _, k := range keys[:20] {
		registered = append(registered, k)
	}
	require.NoError(t, rdb.SAdd(ctx, redislocks.OwnerLocksPrefix+fl.liveOwners[0], registered...).Err())

	counted, read := countingClient(t, rdb)
	// The defaults: a thousand keys per read and the Redis call deadline.
	r, err := reaper.New(passConfig(), counted, f.DB.Pool, passtest.Logger())
	require.NoError(t, err)

	check := func(rep *reaper.Report) {
		t.Helper()
		requireIgnoredUnread(t, rep, fl, keys, "string", "value of 1048576 bytes, not read: owner name longer than 1024 bytes")
	}
	check(f.pass(r, reaper.ModeAudit))
	require.Less(t, read.Load(), int64(8<<20), "bytes read from Redis by the audit, of %d MiB of huge values", huge)
	f.requireHealthy(fl)

	check(f.pass(r, reaper.ModeOnce))
	f.requireConverged(fl)
	for _, k := range keys {
		require.Equal(t, int64(size), rdb.StrLen(ctx, k).Val(), "huge value untouched: %s", k)
	}
}

// TestBadInputHugeSetMembersNotRead: 40 shared locks whose sets hold a
// member of 1 MiB (some beside a dead owner's name), beside a fleet's real
// locks. SSCAN answers a small set whole, so only the script that reads a
// set's members on the server keeps them unread: an audit and a real pass
// complete, report each huge member as ignored, read a small part of the
// 40 MiB, judge the real locks and the dead owner's memberships as
// without them, and leave the huge members as they were.
func TestBadInputHugeSetMembersNotRead(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	fl := f.buildFleet(3)
	ctx, rdb := f.Ctx, f.Redis.Client
	const huge, size = 40, 1 << 20
	member := strings.Repeat("m", size)
	var keys []string
	for i := range huge {
		k := judge.ResourceKeyPrefix + repo()
		keys = append(keys, k)
		members := []any{member}
		if i%2 == 1 {
			members = append(members, fl.deadOwner)
			fl.stale = append(fl.stale, heldKey{k, fl.deadOwner})
		}
		require.NoError(t, rdb.SAdd(ctx, k, members...).Err())
	}

	counted, read := countingClient(t, rdb)
	r, err := reaper.New(passConfig(), counted, f.DB.Pool, passtest.Logger())
	require.NoError(t, err)
	check := func(rep *reaper.Report) {
		t.Helper()
		requireIgnoredUnread(t, rep, fl, keys, "set", "member of 1048576 bytes, not read: an owner name is at most 1024 bytes")
	}
	check(f.pass(r, reaper.ModeAudit))
	require.Less(t, read.Load(), int64(4<<20), "bytes read from Redis by the audit, of %d MiB of huge members", huge)
	f.requireHealthy(fl)

	check(f.pass(r, reaper.ModeOnce))
	f.requireConverged(fl)
	for _, k := range keys {
		require.Equal(t, int64(1), rdb.SCard(ctx, k).Val(), "huge member untouched: %s", k)
	}
}

// requireIgnoredUnread: the pass completed, reported each of keys (and
// nothing else) as ignored, of type typ, for a reason that says reason, and
// judged the fleet's stale holdings as without them.
func requireIgnoredUnread(t *testing.T, rep *reaper.Report, fl *builtFleet, keys []string, typ, reason string) {
	t.Helper()
	require.Empty(t, rep.Error)
	for _, k := range keys {
		ig := biIgnored(t, rep, k)
		require.Equal(t, typ, ig.Type)
		require.Contains(t, ig.Reason, reason)
	}
	require.Len(t, rep.Ignored, len(keys))
	for _, h := range fl.stale {
		require.NotNil(t, findingFor(rep, h.key, h.owner), "stale holding judged: %v", h)
	}
	require.Len(t, rep.Findings, len(fl.stale))
}

// countingClient is a client of rdb's server whose reads from Redis are
// counted in read.
func countingClient(t *testing.T, rdb *redis.Client) (*redis.Client, *atomic.Int64) {
	read := new(atomic.Int64)
	opts := *rdb.Options()
	opts.Dialer = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return countingConn{Conn: c, read: read}, nil
	}
	counted := redis.NewClient(&opts)
	t.Cleanup(func() { _ = counted.Close() })
	return counted, read
}
