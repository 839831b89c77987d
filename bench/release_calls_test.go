package main

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/reaper/redislocks"
)

// TestReleaseCallsFromSlowlog: the release script's calls are told from the
// other scripts' by their SHA, and from the commands scripts ran by the
// client address the SLOWLOG gives those ("?"); the script calls
// commandstats counted beyond the SLOWLOG's are the ones under its
// threshold.
func TestReleaseCallsFromSlowlog(t *testing.T) {
	release := func(us int64, addr string) redis.SlowLog {
		return redis.SlowLog{Args: []string{"evalsha", redislocks.ReleaseScriptSHA(), "1", "k"}, Duration: time.Duration(us) * time.Microsecond, ClientAddr: addr}
	}
	slow := []redis.SlowLog{
		release(200, "127.0.0.1:5000"),
		release(6000, "127.0.0.1:5000"),
		{Args: []string{"MGET", "task:a"}, Duration: 5500 * time.Microsecond, ClientAddr: "?:0"},
		release(1000, "127.0.0.1:5001"),
		{Args: []string{"evalsha", "0123456789abcdef", "1", "k"}, Duration: 300 * time.Microsecond, ClientAddr: "127.0.0.1:5000"},
		{Args: []string{"eval", "return 1", "0"}, Duration: 150 * time.Microsecond, ClientAddr: "127.0.0.1:5000"},
	}
	rc := releaseCalls(slow, 7)
	require.NotNil(t, rc)
	require.Equal(t, ReleaseCalls{Logged: 3, MedianUS: 1000, P90US: 6000, MaxUS: 6000, OverBound: 1, TotalMS: 7.2, ScriptCallsUnder: 2}, *rc)
	require.Nil(t, releaseCalls(nil, 0), "no script called")
	require.Equal(t, &ReleaseCalls{ScriptCallsUnder: 4}, releaseCalls(nil, 4), "every call under the threshold")
}
