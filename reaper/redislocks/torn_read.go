package redislocks

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lock-reaper/lock-reaper/reaper/judge"
	"github.com/redis/go-redis/v9"
)

// A pass reads Redis before the database. An immediate task that pulpcore
// starts in between (it takes task:<T> as immediate-<T>, then sets its row
// running with app_lock_id NULL) would look, to the pass, like a running task
// with no claim and no lock: lost. So once the database is read, the task
// locks of those tasks are read again, in one pipelined round trip, and an
// immediate-<T> lock found is added to the snapshot: the judge keeps it, and
// the task with it. Only that owner is added: a lock read after the database
// has evidence older than itself, which may only protect, never condemn.

// RecheckImmediateLocks returns holdings with the immediate-<T> task locks
// of the unclaimed running or canceling tasks that holdings lack, appended.
func RecheckImmediateLocks(ctx context.Context, rdb redis.UniversalClient, timeout time.Duration, holdings []judge.Holding, tasks map[string]judge.Task) ([]judge.Holding, error) {
	want := map[string]bool{}
	for id, t := range tasks {
		if t.AppLockID == "" && (t.State == judge.StateRunning || t.State == judge.StateCanceling) {
			want[id] = true
		}
	}
	for i := range holdings {
		if len(want) == 0 {
			return holdings, nil
		}
		if holdings[i].Kind == judge.KindTask {
			delete(want, holdings[i].TaskID())
		}
	}
	if len(want) == 0 {
		return holdings, nil
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	type read struct {
		id         string
		value      *redis.StringCmd
		registered *redis.BoolCmd
	}
	reads := make([]read, 0, len(want))
	pipe := rdb.Pipeline()
	for id := range want {
		key, owner := judge.TaskKeyPrefix+id, judge.ImmediateOwnerPrefix+id
		reads = append(reads, read{id: id, value: pipe.Get(cctx, key), registered: pipe.SIsMember(cctx, OwnerLocksPrefix+owner, key)})
	}
	if _, err := pipe.Exec(cctx); err != nil && !errors.Is(err, redis.Nil) && !isWrongType(err) {
		return nil, fmt.Errorf("read the task locks of %d unclaimed running tasks again: %w", len(reads), err)
	}
	for _, rd := range reads {
		owner := judge.ImmediateOwnerPrefix + rd.id
		if v, err := rd.value.Result(); err != nil || v != owner {
			continue
		}
		holdings = append(holdings, judge.Holding{Key: judge.TaskKeyPrefix + rd.id, Kind: judge.KindTask, Owner: owner, Registered: rd.registered.Val()})
	}
	return holdings, nil
}
