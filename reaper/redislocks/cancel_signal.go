package redislocks

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"
)

// pulpcore's cancel signal for a running task (publish_cancel_signal in
// pulpcore/tasking/redis_tasks.py): the supervising worker checks for the key
// every heartbeat, and on finding it aborts the task and deletes the key.
const (
	CancelSignalPrefix = "pulp:task:cancel:"
	cancelSignalValue  = "cancel"
	cancelSignalTTL    = 24 * time.Hour
)

// PublishCancelSignals sets pulpcore's cancel signal of each task, in one
// pipelined round trip, once its update is committed.
func PublishCancelSignals(ctx context.Context, rdb redis.UniversalClient, timeout time.Duration, log *slog.Logger, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	_, err := rdb.Pipelined(cctx, func(p redis.Pipeliner) error {
		for _, id := range ids {
			p.SetEx(cctx, CancelSignalPrefix+id, cancelSignalValue, cancelSignalTTL)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("publish the cancel signal of %d tasks (%s…): %w", len(ids), CancelSignalPrefix+ids[0], err)
	}
	for _, id := range ids {
		log.Info("published cancel signal", slog.String("task", id), slog.String("key", CancelSignalPrefix+id))
	}
	return nil
}
