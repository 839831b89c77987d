package pulpdb

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestReadHeartbeats: every core_appstatus row with its ttl and last
// heartbeat, and the database's now, read in one short read-only
// REPEATABLE READ transaction. A ttl out of range is brought into it, and a
// version 7 pulp_id gives the row's creation time.
func TestReadHeartbeats(t *testing.T) {
	t.Parallel()
	f := dbFixture(t)
	f.Worker("alive@w", 5*time.Second)
	f.Worker("dead@w", 10*time.Minute)
	huge := f.AppStatus("huge@h", "api", time.Minute, 0)
	negative := f.AppStatus("negative@h", "content", time.Minute, 0)
	_, err := f.DB.Pool.Exec(f.Ctx, `UPDATE core_appstatus SET ttl = CASE pulp_id WHEN $1 THEN interval '1000 years' ELSE interval '-5 seconds' END
		WHERE pulp_id IN ($1, $2)`, huge, negative)
	require.NoError(t, err)
	const v7 = "01927b2a-3c4d-7abc-8def-0123456789ab"
	_, err = f.DB.Pool.Exec(f.Ctx, `UPDATE core_appstatus SET pulp_id = $1 WHERE name = 'alive@w'`, v7)
	require.NoError(t, err)
	pool, log := tracedPool(t, f)

	before := dbNow(t, f)
	hb, err := ReadHeartbeats(f.Ctx, pool, testTimeout)
	require.NoError(t, err)
	after := dbNow(t, f)
	pids, sqls := log.take()
	requireOneTransaction(t, pids, sqls, "begin isolation level repeatable read read only")

	require.False(t, hb.Now.Before(before) || hb.Now.After(after), "the database's now, %v, between %v and %v", hb.Now, before, after)
	type row struct {
		appType  string
		ttl, age time.Duration
		created  time.Time
	}
	got := map[string]row{}
	for _, r := range hb.Rows {
		got[r.Name] = row{r.AppType, r.TTL, hb.Now.Sub(r.LastHeartbeat).Round(time.Second), r.PulpCreated}
	}
	require.Equal(t, map[string]row{
		"alive@w":    {"worker", 30 * time.Second, 5 * time.Second, time.UnixMilli(0x01927b2a3c4d).UTC()},
		"dead@w":     {"worker", 30 * time.Second, 10 * time.Minute, time.Time{}},
		"huge@h":     {"api", maxTTL, 0, time.Time{}},
		"negative@h": {"content", 0, 0, time.Time{}},
	}, got)
}

// TestReadHeartbeatsEmptyFleet: a database without a heartbeat row is read
// as no rows, not as an error: the rules decide what an empty fleet means.
func TestReadHeartbeatsEmptyFleet(t *testing.T) {
	t.Parallel()
	f := dbFixture(t)
	hb, err := ReadHeartbeats(f.Ctx, f.DB.Pool, testTimeout)
	require.NoError(t, err)
	require.Empty(t, hb.Rows)
	require.False(t, hb.Now.IsZero())
}
