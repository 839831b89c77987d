package reaper

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/lock-reaper/lock-reaper/judge"
	"github.com/stretchr/testify/require"
)

// TestReleaseBatchAsIfWrittenAtOnce: the release script deletes the string
// locks and removes the registry entries at the end of the batch, yet every
// holding gets the result it would have had were each write made as its
// holding came: a key released earlier in the batch is already gone for a
// later holding of it, of either kind; each owner's registry loses exactly
// the keys it no longer holds; a dead owner whose registry the batch empties
// leaves pulp:active_owners.
func TestReleaseBatchAsIfWrittenAtOnce(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	rdb := f.redis.Client
	const dead, other = "1@dead", "2@other"
	held := judge.ResourceKeyPrefix + "prn:rpm.rpmrepository:held"
	taken := judge.ResourceKeyPrefix + "prn:rpm.rpmrepository:taken"
	domainSet := judge.ResourceKeyPrefix + domain
	task := judge.TaskKeyPrefix + newUUID()
	for _, k := range []string{held, task} {
		require.NoError(t, rdb.Set(f.ctx, k, dead, 0).Err())
	}
	require.NoError(t, rdb.Set(f.ctx, taken, other, 0).Err())
	require.NoError(t, rdb.SAdd(f.ctx, domainSet, dead, other).Err())
	require.NoError(t, rdb.SAdd(f.ctx, OwnerLocksPrefix+dead, held, taken, task, domainSet).Err())
	require.NoError(t, rdb.SAdd(f.ctx, OwnerLocksPrefix+other, taken, domainSet).Err())
	require.NoError(t, rdb.SAdd(f.ctx, ActiveOwnersKey, dead, other).Err())

	rel := &releaser{rdb: rdb, batchSize: 100, timeout: 10 * time.Second}
	holdings := []judge.Holding{
		{Key: held, Owner: dead, Kind: judge.KindExclusive},
		{Key: held, Owner: dead, Kind: judge.KindExclusive}, // listed twice: gone by now
		{Key: held, Owner: dead, Kind: judge.KindShared},    // as a set member: no key either
		{Key: task, Owner: dead, Kind: judge.KindTask},
		{Key: taken, Owner: dead, Kind: judge.KindExclusive}, // another owner's now
		{Key: domainSet, Owner: dead, Kind: judge.KindShared},
		{Key: domainSet, Owner: dead, Kind: judge.KindShared}, // the member is gone by now
	}
	res, err := rel.release(f.ctx, releaseBatch{holdings: holdings, guarded: make([]bool, len(holdings)), retire: []string{dead}})
	require.NoError(t, err)
	require.Equal(t, []Result{ResultReleased, ResultAlreadyGone, ResultAlreadyGone, ResultReleased,
		ResultOwnerChanged, ResultReleased, ResultAlreadyGone}, res)

	require.Equal(t, "", f.get(held))
	require.Equal(t, "", f.get(task))
	require.Equal(t, other, f.get(taken), "another owner's lock is left alone")
	require.ElementsMatch(t, []string{other}, f.members(domainSet))
	require.Zero(t, rdb.Exists(f.ctx, OwnerLocksPrefix+dead).Val(), "the dead owner's registry lost every key it no longer holds")
	require.ElementsMatch(t, []string{taken, domainSet}, f.members(OwnerLocksPrefix+other), "another owner's registry is not touched")
	require.ElementsMatch(t, []string{other}, f.members(ActiveOwnersKey), "the dead owner left, after its registry emptied")
}

// TestReleaseBatchNewTaskCheckSeesItsOwnDeletes: a live owner's registry
// lists a task key it was not seen holding, whose lock another (dead) owner
// holds. When the same batch releases that lock first, the key is gone by the
// time the live owner's holding comes: its entry is stale, pruned, and the
// live owner's leaked resource is released, as it would be had the lock been
// deleted on the spot. Coming first, the same holding finds the key there and
// is left alone.
func TestReleaseBatchNewTaskCheckSeesItsOwnDeletes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name        string
		deleteFirst bool
		want        Result
	}{
		{"the lock is released earlier in the batch", true, ResultReleased},
		{"the lock is released later in the batch", false, ResultOwnerChanged},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			rdb := f.redis.Client
			const dead, live = "1@dead", "1@live"
			foreign := judge.TaskKeyPrefix + newUUID()
			running := judge.TaskKeyPrefix + newUUID()
			leak := judge.ResourceKeyPrefix + "prn:rpm.rpmrepository:leak"
			require.NoError(t, rdb.Set(f.ctx, foreign, dead, 0).Err())
			require.NoError(t, rdb.Set(f.ctx, running, live, 0).Err())
			require.NoError(t, rdb.Set(f.ctx, leak, live, 0).Err())
			require.NoError(t, rdb.SAdd(f.ctx, OwnerLocksPrefix+dead, foreign).Err())
			require.NoError(t, rdb.SAdd(f.ctx, OwnerLocksPrefix+live, foreign, running, leak).Err())

			deleted := judge.Holding{Key: foreign, Owner: dead, Kind: judge.KindTask}
			guardedLeak := judge.Holding{Key: leak, Owner: live, Kind: judge.KindExclusive}
			b := releaseBatch{holdings: []judge.Holding{deleted, guardedLeak}, guarded: []bool{false, true},
				seen: map[string][]string{live: {running}}}
			if !tc.deleteFirst {
				b.holdings, b.guarded = []judge.Holding{guardedLeak, deleted}, []bool{true, false}
			}
			rel := &releaser{rdb: rdb, batchSize: 100, timeout: 10 * time.Second}
			res, err := rel.release(f.ctx, b)
			require.NoError(t, err)
			results := map[string]Result{b.holdings[0].Key: res[0], b.holdings[1].Key: res[1]}
			require.Equal(t, ResultReleased, results[foreign])
			require.Equal(t, tc.want, results[leak])
			require.Equal(t, "", f.get(foreign))
			if tc.want == ResultReleased {
				require.Equal(t, "", f.get(leak))
				require.ElementsMatch(t, []string{running}, f.members(OwnerLocksPrefix+live), "the stale entry is pruned")
			} else {
				require.Equal(t, live, f.get(leak))
				require.ElementsMatch(t, []string{foreign, running, leak}, f.members(OwnerLocksPrefix+live))
			}
		})
	}
}

// TestReleaseLogComesBeforeThePassEnds: the release lines are written on a
// goroutine of their own while the next batch runs; by the time RunOnce
// returns, every released holding has its line, once.
func TestReleaseLogComesBeforeThePassEnds(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	const dead = "1@dead"
	f.worker(dead, time.Hour)
	var want []string
	for range 12 {
		id := f.task(judge.StateRunning, "", nil, -1)
		f.acquire(dead, id, []string{repo()}, false)
	}
	log := &lineLog{}
	cfg := DefaultConfig()
	cfg.BatchSize = 5 // five batches, logged while the next one runs
	r, err := New(cfg, f.redis.Client, f.db.Pool, slog.New(slog.NewJSONHandler(log, nil)))
	require.NoError(t, err)
	rep, err := r.RunOnce(f.ctx, PassOptions{Mode: ModeOnce})
	require.NoError(t, err)
	require.Equal(t, 24, rep.Summary.Released)
	for _, fd := range rep.Findings {
		if fd.Result == ResultReleased {
			want = append(want, fd.Key)
		}
	}
	got := log.keys("released holding")
	require.ElementsMatch(t, want, got, "a line for each released holding")
	require.Len(t, got, len(want))
}

// lineLog collects JSON log lines, safely from several goroutines.
type lineLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *lineLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// keys returns the "key" attribute of every line whose message is msg.
func (l *lineLog) keys(msg string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, line := range bytes.Split(l.buf.Bytes(), []byte("\n")) {
		var rec struct{ Msg, Key string }
		if json.Unmarshal(line, &rec) == nil && rec.Msg == msg {
			out = append(out, rec.Key)
		}
	}
	return out
}
