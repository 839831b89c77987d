package ctxwait

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestSleepEndsOnCancel(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	require.True(t, Sleep(ctx, 0))
	require.True(t, Sleep(ctx, time.Millisecond))
	cancel()
	require.False(t, Sleep(ctx, 0))
	start := time.Now()
	require.False(t, Sleep(ctx, time.Hour))
	require.Less(t, time.Since(start), time.Minute)
}
