package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/lock-reaper/lock-reaper/reaper/judge"
	"github.com/lock-reaper/lock-reaper/reaper/redislocks"
)

// walkResult is what the baseline walk saw.
type walkResult struct {
	keys     int
	lockKeys int
}

// baselineWalk is the cost floor of a full pass: one SCAN of the keyspace
// with the reaper's MATCH and COUNT, then the type and value of every lock
// key, pipelined batchSize keys at a time. It is written the simplest way
// go-redis allows and does nothing with what it reads.
func baselineWalk(ctx context.Context, rdb *redis.Client, scanCount, batchSize int) (walkResult, error) {
	var res walkResult
	var lockKeys []string
	iter := rdb.Scan(ctx, 0, redislocks.ScanMatch, int64(scanCount)).Iterator()
	for iter.Next(ctx) {
		res.keys++
		k := iter.Val()
		if strings.HasPrefix(k, judge.TaskKeyPrefix) || strings.HasPrefix(k, judge.ResourceKeyPrefix) {
			lockKeys = append(lockKeys, k)
		}
	}
	if err := iter.Err(); err != nil {
		return res, fmt.Errorf("baseline scan: %w", err)
	}
	res.lockKeys = len(lockKeys)
	for start := 0; start < len(lockKeys); start += batchSize {
		pipe := rdb.Pipeline()
		for _, k := range lockKeys[start:min(start+batchSize, len(lockKeys))] {
			pipe.Type(ctx, k)
			pipe.Get(ctx, k)
		}
		// GET of a shared set answers WRONGTYPE and of a vanished key nil;
		// both are answers, not failures.
		if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) && !strings.HasPrefix(err.Error(), "WRONGTYPE") {
			return res, fmt.Errorf("baseline read: %w", err)
		}
	}
	return res, nil
}
