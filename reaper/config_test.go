package reaper_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/reaper"
)

func TestDefaultConfigIsValid(t *testing.T) {
	t.Parallel()
	require.NoError(t, reaper.DefaultConfig().Validate())
}

// TestValidateReportsEverySetting: every bad setting is reported, each
// named by its configuration key, not only the first.
func TestValidateReportsEverySetting(t *testing.T) {
	t.Parallel()
	c := reaper.DefaultConfig()
	c.HeartbeatGrace = -time.Second
	c.ScanCount = 0
	c.LostRunning = "exploded"
	c.MaxDeadFraction = 1.5
	c.Kubernetes.ClockSkew = time.Minute
	c.KubernetesTimeout = 0
	c.ConfirmAfter = 2 * time.Hour
	err := c.Validate()
	require.Error(t, err)
	for _, want := range []string{
		"heartbeat_grace must not be negative, got -1s",
		"redis.scan_count must be greater than 0, got 0",
		`lost_running invalid value "exploded": want one of canceled, failed`,
		"max_dead_fraction must be between 0 and 1, got 1.5",
		"kubernetes.clock_margin must be between 0s and 30s",
		"kubernetes.timeout must be greater than 0, got 0s",
		"suspect_ttl (1h) must be greater than confirm_after (2h)",
	} {
		require.ErrorContains(t, err, want)
	}
	var se *reaper.SettingError
	require.True(t, errors.As(err, &se))
	require.Equal(t, "redis.scan_count", se.Key, "in the order of the settings")

	_, err = reaper.New(c, nil, nil, nil)
	require.ErrorContains(t, err, "heartbeat_grace must not be negative")
}
