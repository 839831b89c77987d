package pgcluster

import (
	"context"
	"testing"
)

// TestStandbyReplaysThePrimary starts a primary and a hot standby of it: the
// standby is in recovery, refuses writes, and sees what the primary wrote.
func TestStandbyReplaysThePrimary(t *testing.T) {
	ctx := context.Background()
	primary := StartPrimary(t)
	standby := primary.StartStandby(t)
	var inRecovery bool
	if err := queryRow(ctx, primary.URL("postgres"), "SELECT pg_is_in_recovery()", &inRecovery); err != nil || inRecovery {
		t.Fatalf("primary: in recovery %v, err %v", inRecovery, err)
	}
	primary.Exec(t, "postgres", "CREATE TABLE seen AS SELECT 42 AS n")
	standby.WaitReplayed(t, primary)
	var n int
	if err := queryRow(ctx, standby.URL("postgres"), "SELECT n FROM seen", &n); err != nil || n != 42 {
		t.Fatalf("standby: n = %d, err %v", n, err)
	}
	if err := queryRow(ctx, standby.URL("postgres"), "SELECT pg_is_in_recovery()", &inRecovery); err != nil || !inRecovery {
		t.Fatalf("standby: in recovery %v, err %v", inRecovery, err)
	}
}
