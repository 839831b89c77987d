package pulpdb

import (
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
)

// TestReadHeartbeats: every core_appstatus row with its ttl and last
// heartbeat, and the database's now, read in one batch: the statement
// timeout and one statement, nothing else. A ttl out of range is brought into it, and a
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
	_, sqls := log.take()
	require.Equal(t, []string{"batch: select set_config('statement_timeout', $1::text, true) | " + strings.Join(strings.Fields(strings.ToLower(heartbeatsSQL)), " ")}, sqls)

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

// TestHeartbeatBatchIsOneTransaction: the statement_timeout the batch sets
// first bounds the read after it, whatever the exec mode (PgBouncer's
// transaction pooling needs simple_protocol): the protocol makes one
// transaction of a batch.
func TestHeartbeatBatchIsOneTransaction(t *testing.T) {
	t.Parallel()
	f := dbFixture(t)
	for name, mode := range map[string]pgx.QueryExecMode{
		"cache_statement": pgx.QueryExecModeCacheStatement, "cache_describe": pgx.QueryExecModeCacheDescribe,
		"describe_exec": pgx.QueryExecModeDescribeExec, "exec": pgx.QueryExecModeExec, "simple_protocol": pgx.QueryExecModeSimpleProtocol,
	} {
		pool := poolOf(t, f.DB.URL, func(c *pgxpool.Config) { c.ConnConfig.DefaultQueryExecMode = mode })
		for range 2 { // the second time, the statements are prepared
			rows, done, err := queryTimed(f.Ctx, pool, 1234*time.Millisecond, "SELECT current_setting('statement_timeout')")
			require.NoError(t, err, name)
			var got string
			require.True(t, rows.Next(), name)
			require.NoError(t, rows.Scan(&got), name)
			done()
			require.Equal(t, "1234ms", got, name)
		}
		// and not beyond the batch
		var after string
		require.NoError(t, pool.QueryRow(f.Ctx, "SELECT current_setting('statement_timeout')").Scan(&after), name)
		require.NotEqual(t, "1234ms", after, name)
	}
}
