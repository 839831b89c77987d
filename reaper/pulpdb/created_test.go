package pulpdb

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestCreatedFromID(t *testing.T) {
	t.Parallel()
	// 0x0192_7b2a_3c4d ms = 2024-10-13T...; a version 7 UUID.
	at, ok := createdFromID("01927b2a-3c4d-7abc-8def-0123456789ab")
	require.True(t, ok)
	require.Equal(t, time.UnixMilli(0x01927b2a3c4d).UTC(), at)
	for _, id := range []string{"", "r", "01927b2a-3c4d-4abc-8def-0123456789ab", "01927b2a-3c4d-7abc-8def-0123456789a", "0192zb2a-3c4d-7abc-8def-0123456789ab"} {
		_, ok := createdFromID(id)
		require.False(t, ok, id)
	}
}
