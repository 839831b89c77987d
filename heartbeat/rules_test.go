package heartbeat

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The first layer of heartbeat's tests: the decision functions called with
// their facts, one case per row of docs/verdicts.md's owner liveness table
// (the pod rules' are in pods_test.go).

// TestRuleOwnerLiveness is the owner liveness table.
func TestRuleOwnerLiveness(t *testing.T) {
	t.Parallel()
	const ttl, grace = 30 * time.Second, 30 * time.Second
	row := func(age time.Duration) AppStatus {
		return AppStatus{ID: "r", Name: "1@w", AppType: "worker", TTL: ttl, LastHeartbeat: ltNow.Add(-age)}
	}
	for _, c := range []struct {
		row  string
		age  time.Duration
		want Liveness
	}{
		{"alive: heartbeat within ttl", ttl, Alive},
		{"late: past ttl, within ttl + heartbeat_grace", ttl + grace, Late},
		{"dead: past ttl + heartbeat_grace", ttl + grace + time.Millisecond, Dead},
	} {
		require.Equal(t, c.want, row(c.age).Liveness(ltNow, grace), c.row)
	}
	fleet := NewFleet([]AppStatus{row(0)}, ltNow, grace)
	require.Equal(t, Gone, fleet.Owner("1@nobody").Liveness, "gone: no row has this name")
}
