package testenv

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// A developer's server keeps a key in every database; the test machinery,
// pointed at it, claims nothing it did not find empty and leaves every key.
func TestPreexistingKeysInEveryRedisDatabaseSurvive(t *testing.T) {
	dev, err := StartRedisServer()
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Stop()
	ctx := context.Background()
	sentinel := func(db int) *redis.Client {
		return redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", dev.Port), DB: db})
	}
	for db := 0; db <= 15; db++ {
		c := sentinel(db)
		if err := c.Set(ctx, "developer:keep-me", fmt.Sprint(db), 0).Err(); err != nil {
			t.Fatal(err)
		}
		c.Close()
	}
	checkSentinels := func(dbs ...int) {
		t.Helper()
		for _, db := range dbs {
			c := sentinel(db)
			v, err := c.Get(ctx, "developer:keep-me").Result()
			c.Close()
			if err != nil || v != fmt.Sprint(db) {
				t.Errorf("database %d: sentinel key %q, %v; want it untouched", db, v, err)
			}
		}
	}
	all := make([]int, 16)
	for i := range all {
		all[i] = i
	}

	// Every database holds a key: nothing can be claimed, and the error says why.
	if _, err := claimRedis(dev.URL, 300*time.Millisecond); err == nil || !strings.Contains(err.Error(), "never used") {
		t.Fatalf("claim on a server with no empty database: %v, want a refusal", err)
	}
	checkSentinels(all...)

	// Databases 1-14 and 0 hold keys: the claim lands on 15, the test's keys
	// there are removed at cleanup, every other key stays.
	c := sentinel(15)
	c.Del(ctx, "developer:keep-me")
	c.Close()
	for range 3 {
		r, err := claimRedis(dev.URL, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if r.DB != 15 {
			t.Fatalf("claimed database %d, which holds a developer's key", r.DB)
		}
		r.Client.Set(ctx, "test:key", "1", 0)
		r.release()
		checkSentinels(all[:15]...)
		if n := sentinel(15).DBSize(ctx).Val(); n != 0 {
			t.Fatalf("the test's keys stayed behind in database 15: %d", n)
		}
	}
}

// Without REAPER_TEST_REDIS_URL the tests use a server of their own, never
// the developer's default one.
func TestDefaultRedisIsOwnServer(t *testing.T) {
	if v := os.Getenv("REAPER_TEST_REDIS_URL"); v != "" {
		t.Skipf("REAPER_TEST_REDIS_URL=%s is set", v)
	}
	u := RedisURL()
	if strings.Contains(u, ":6379") {
		t.Fatalf("RedisURL() = %s, the default server", u)
	}
	opts, err := redis.ParseURL(u)
	if err != nil {
		t.Fatal(err)
	}
	if err := redis.NewClient(opts).Ping(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
}
