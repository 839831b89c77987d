package redislocks

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lock-reaper/lock-reaper/reaper/judge"
)

// pulpcore's cancel signal for a running task (publish_cancel_signal in
// pulpcore/tasking/redis_tasks.py): the supervising worker checks for the key
// every heartbeat, and on finding it aborts the task and deletes the key.
const (
	CancelSignalPrefix = "pulp:task:cancel:"
	cancelSignalValue  = "cancel"
	cancelSignalTTL    = judge.CancelSignalLifetime
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

// SignalAgain is a cancel signal to publish again: its task, and the
// lifetime the first one has left (judge.SignalLifetimeLeft).
type SignalAgain struct {
	ID  string
	TTL time.Duration
}

// RepublishMissingCancelSignals publishes again the cancel signals of
// signals that Redis does not hold, each with the lifetime it has left, and
// returns how many it published. Their tasks are final: a signal published
// again that a worker had read and deleted is read by no one and expires. It
// costs two pipelined round trips, EXISTS then SETEX, with the commands the
// reaper's Redis user already has; a signal deleted between the two is
// published again, which is as harmless.
func RepublishMissingCancelSignals(ctx context.Context, rdb redis.UniversalClient, timeout time.Duration, log *slog.Logger, signals []SignalAgain) (int, error) {
	if len(signals) == 0 {
		return 0, nil
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	exists := make([]*redis.IntCmd, len(signals))
	if _, err := rdb.Pipelined(cctx, func(p redis.Pipeliner) error {
		for i, s := range signals {
			exists[i] = p.Exists(cctx, CancelSignalPrefix+s.ID)
		}
		return nil
	}); err != nil {
		return 0, fmt.Errorf("ask Redis which of %d cancel signals it holds (%s…): %w", len(signals), CancelSignalPrefix+signals[0].ID, err)
	}
	var missing []SignalAgain
	for i, s := range signals {
		if exists[i].Val() == 0 {
			missing = append(missing, s)
		}
	}
	if len(missing) == 0 {
		return 0, nil
	}
	if _, err := rdb.Pipelined(cctx, func(p redis.Pipeliner) error {
		for _, s := range missing {
			p.SetEx(cctx, CancelSignalPrefix+s.ID, cancelSignalValue, wholeSeconds(s.TTL))
		}
		return nil
	}); err != nil {
		return 0, fmt.Errorf("publish again the cancel signal of %d tasks (%s…): %w", len(missing), CancelSignalPrefix+missing[0].ID, err)
	}
	for _, s := range missing {
		log.Info("published a missing cancel signal again", slog.String("task", s.ID),
			slog.String("key", CancelSignalPrefix+s.ID), slog.Duration("expires_in", wholeSeconds(s.TTL)))
	}
	return len(missing), nil
}

// wholeSeconds rounds d down to SETEX's whole seconds, so that a signal
// published again never outlives the first; at least one.
func wholeSeconds(d time.Duration) time.Duration {
	return max(time.Second, d.Truncate(time.Second))
}
