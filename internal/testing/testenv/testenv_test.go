package testenv

import (
	"context"
	"testing"
)

func TestDatabaseAndRedisAreIsolated(t *testing.T) {
	t.Parallel()
	a, b := NewDatabase(t), NewDatabase(t)
	if a.Name == b.Name {
		t.Fatal("two tests got the same database")
	}
	var n int
	if err := a.Pool.QueryRow(context.Background(), "SELECT count(*) FROM core_domain").Scan(&n); err != nil || n != 1 {
		t.Fatalf("schema not loaded: n=%d err=%v", n, err)
	}
	r1, r2 := NewRedis(t), NewRedis(t)
	if r1.DB == r2.DB {
		t.Fatal("two tests got the same redis database")
	}
	if err := r1.Client.Set(context.Background(), "x", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if r2.Client.Exists(context.Background(), "x").Val() != 0 {
		t.Fatal("redis databases leak into each other")
	}
}
