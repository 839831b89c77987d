package metrics

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/reaper"
)

// TestRedisLoadCounters: every pass's Redis load adds to the counters, a
// failed pass's too (its calls were made).
func TestRedisLoadCounters(t *testing.T) {
	t.Parallel()
	m := New("test")
	load := reaper.RedisLoad{KeysScanned: 20, ScanCalls: 3, Commands: 30, RoundTrips: 12, WaitSeconds: 0.25}
	m.Observe(&reaper.Report{RedisLoad: load})
	m.Observe(&reaper.Report{RedisLoad: load, Error: "cut short"})
	require.Equal(t, 6.0, testutil.ToFloat64(m.redisLoad.commands.WithLabelValues(commandScan)))
	require.Equal(t, 60.0, testutil.ToFloat64(m.redisLoad.commands.WithLabelValues(commandOther)))
	require.Equal(t, 24.0, testutil.ToFloat64(m.redisLoad.roundTrips))
	require.Equal(t, 40.0, testutil.ToFloat64(m.redisLoad.keysScanned))
	require.Equal(t, 0.5, testutil.ToFloat64(m.redisLoad.wait))
}
