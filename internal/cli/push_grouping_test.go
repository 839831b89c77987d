package cli

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/reaper"
)

// TestPushGrouping: pushgateway_grouping puts the push in a group of its
// own (job lock_reaper plus the labels), so that reapers of two namespaces
// pushing to one Pushgateway do not replace each other's values, and the
// labels reach every series the Pushgateway exposes.
func TestPushGrouping(t *testing.T) {
	t.Parallel()
	gw := newFakePushgateway(t)
	rep := &reaper.Report{Mode: reaper.ModeOnce}
	require.NoError(t, pushMetrics(context.Background(), gw.url(), "namespace=pulp, instance=pulp-reaper", "test", rep, nil))
	require.NoError(t, pushMetrics(context.Background(), gw.url(), "", "test", rep, nil))
	pushes := gw.received()
	require.Len(t, pushes, 2)

	parts := strings.Split(strings.TrimPrefix(pushes[0].path, "/metrics/job/lock_reaper/"), "/")
	require.Len(t, parts, 4, pushes[0].path)
	pairs := []string{parts[0] + "=" + parts[1], parts[2] + "=" + parts[3]}
	slices.Sort(pairs)
	require.Equal(t, []string{"instance=pulp-reaper", "namespace=pulp"}, pairs)
	require.Equal(t, "/metrics/job/lock_reaper", pushes[1].path, "no grouping: the job alone")

	err := pushMetrics(context.Background(), gw.url(), "job=other", "test", rep, nil)
	require.ErrorContains(t, err, "pushgateway_grouping")
	require.Len(t, gw.received(), 2, "a bad grouping pushes nothing")
}
