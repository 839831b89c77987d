package daemon

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestReadiness(t *testing.T) {
	t.Parallel()
	h := newHealth(3, time.Minute)
	h.loopStarted()
	ready, reason := h.ready()
	require.False(t, ready)
	require.Equal(t, "no pass has completed yet", reason)

	h.passEnded(false)
	ready, _ = h.ready()
	require.False(t, ready, "failures before the first completed pass")

	h.passEnded(true)
	ready, _ = h.ready()
	require.True(t, ready)

	h.passEnded(false)
	h.passEnded(false)
	ready, _ = h.ready()
	require.True(t, ready, "two failures in a row are tolerated")
	h.passEnded(false)
	ready, reason = h.ready()
	require.False(t, ready)
	require.Equal(t, "the last 3 passes failed", reason)

	h.passEnded(true)
	ready, _ = h.ready()
	require.True(t, ready, "ready again after the next completed pass")
}

func TestLiveness(t *testing.T) {
	t.Parallel()
	h := newHealth(3, time.Minute)
	live, _ := h.live(t0)
	require.False(t, live, "not before the loop runs")
	h.loopStarted()
	live, _ = h.live(t0)
	require.True(t, live)

	h.passStarted(t0)
	live, _ = h.live(t0.Add(time.Minute))
	require.True(t, live)
	live, reason := h.live(t0.Add(time.Minute + time.Second))
	require.False(t, live)
	require.Equal(t, "a pass has been running for 1m1s", reason)
	h.passEnded(true)
	live, _ = h.live(t0.Add(time.Hour))
	require.True(t, live)

	h.loopStopped()
	live, _ = h.live(t0.Add(time.Hour))
	require.False(t, live)
}
