// Package redisclaim hands out Redis logical databases 1..15 to the programs
// that need one to themselves (tests, the demo, the benchmark), so that they
// never share one. A claim is a key in database 0 with an expiry: a crashed
// holder frees its claim by itself.
package redisclaim

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

const (
	firstDB = 1
	lastDB  = 15
	keyBase = "lock-reaper:claim:db:"
)

// releaseScript deletes a claim only while it is still ours.
var releaseScript = redis.NewScript(`if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`)

// Claim is one claimed, empty logical database.
type Claim struct {
	DB    int
	base  redis.Options
	token string
}

// Acquire claims a logical database on the server of base, waiting up to
// wait for one to be free. With requireEmpty, databases holding keys are
// passed over, so a claim never lands on data someone left there.
func Acquire(ctx context.Context, base *redis.Options, ttl, wait time.Duration, requireEmpty bool) (*Claim, error) {
	b := *base
	b.DB = 0
	registry := redis.NewClient(&b)
	defer registry.Close()
	tok := make([]byte, 8)
	_, _ = rand.Read(tok)
	c := &Claim{base: *base, token: hex.EncodeToString(tok)}
	deadline := time.Now().Add(wait)
	for {
		for db := lastDB; db >= firstDB; db-- {
			ok, err := registry.SetNX(ctx, keyBase+strconv.Itoa(db), c.token, ttl).Result()
			if err != nil {
				return nil, fmt.Errorf("claim a redis database: %w", err)
			}
			if !ok {
				continue
			}
			c.DB = db
			if !requireEmpty {
				return c, nil
			}
			empty, err := c.empty(ctx)
			if err == nil && empty {
				return c, nil
			}
			c.Release()
			if err != nil {
				return nil, err
			}
		}
		if time.Now().After(deadline) {
			return nil, errors.New("no free redis logical database (1-15)")
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (c *Claim) empty(ctx context.Context) (bool, error) {
	cl := redis.NewClient(c.Options())
	defer cl.Close()
	n, err := cl.DBSize(ctx).Result()
	if err != nil {
		return false, fmt.Errorf("size of redis database %d: %w", c.DB, err)
	}
	return n == 0, nil
}

// Options are the client options for the claimed database.
func (c *Claim) Options() *redis.Options {
	o := c.base
	o.DB = c.DB
	return &o
}

// URL is serverURL, the URL the claim was made from, with the claimed
// database in its path: what the reaper under test or the demo connects to.
func (c *Claim) URL(serverURL string) (string, error) {
	u, err := url.Parse(serverURL)
	if err != nil {
		return "", fmt.Errorf("parse redis url: %w", err)
	}
	u.Path = "/" + strconv.Itoa(c.DB)
	return u.String(), nil
}

// Release hands the database back if the claim is still ours.
func (c *Claim) Release() {
	b := c.base
	b.DB = 0
	registry := redis.NewClient(&b)
	defer registry.Close()
	_ = releaseScript.Run(context.Background(), registry, []string{keyBase + strconv.Itoa(c.DB)}, c.token).Err()
}
