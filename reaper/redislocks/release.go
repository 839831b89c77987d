package redislocks

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/lock-reaper/lock-reaper/reaper/judge"
	"github.com/redis/go-redis/v9"
)

// Releaser applies the releases of a plan in batches, one Lua call each.
type Releaser struct {
	RDB redis.UniversalClient
	// Timeout is the deadline of each Redis call.
	Timeout time.Duration
	// Log is told of the registry entries pruned before the releases.
	Log *slog.Logger

	// seenToken names the task locks seen that RememberSeen stored.
	seenToken string
}

// Batch is one call of the release script.
type Batch struct {
	Holdings []judge.Holding
	// Guarded parallels Holdings: release only while the owner took no new task.
	Guarded []bool
	// Reservers parallels Holdings: for a guarded holding (the pass gives
	// them for shared memberships), the incomplete tasks (ids) that reserve
	// its resource; released only while the owner holds none of their task
	// locks.
	Reservers [][]string
	// Retire names the owners judged dead or gone in this batch.
	Retire []string
}

// Outcome is what the release script did with one holding.
type Outcome byte

// The release script's one-letter results.
const (
	// Released: the lock, or the owner's membership, is gone.
	Released Outcome = 'r'
	// AlreadyGone: the holding was gone before the script came to it.
	AlreadyGone Outcome = 'g'
	// OwnerChanged: the key holds something else now, or a guarded owner
	// took a new task since the snapshot; it is left alone.
	OwnerChanged Outcome = 'o'
)

// releaseFlag is a holding's flag for the release script: "s" for a shared
// member, "x" for a string lock, in capitals when guarded.
func releaseFlag(kind judge.Kind, guarded bool) byte {
	switch {
	case kind == judge.KindShared && guarded:
		return 'S'
	case kind == judge.KindShared:
		return 's'
	case guarded:
		return 'X'
	}
	return 'x'
}

// handedBack is the release script's result for a guarded holding whose
// owner's new-task check the call had no SSCAN pages left for: untouched,
// for Release to run again in a call of its own.
const handedBack Outcome = 'b'

// Release runs one batch and returns one Outcome per holding. The holdings
// the script hands back (its SSCAN pages ran out before their owner's
// new-task check ended) go to a further call, as many as it takes: each
// call settles at least its first guarded owner.
func (r *Releaser) Release(ctx context.Context, b Batch) ([]Outcome, error) {
	if len(b.Holdings) == 0 && len(b.Retire) == 0 {
		return nil, nil
	}
	out, err := r.releaseOnce(ctx, b)
	if err != nil {
		return nil, err
	}
	idx := make([]int, len(out))
	for i := range idx {
		idx[i] = i
	}
	for {
		var again []int
		for _, i := range idx {
			if out[i] == handedBack {
				again = append(again, i)
			}
		}
		if len(again) == 0 {
			return out, nil
		}
		if len(again) == len(idx) {
			return nil, fmt.Errorf("release batch: the script handed back all %d holdings it was given", len(idx))
		}
		next := Batch{Holdings: make([]judge.Holding, len(again)), Guarded: make([]bool, len(again))}
		if b.Reservers != nil {
			next.Reservers = make([][]string, len(again))
		}
		for n, i := range again {
			next.Holdings[n], next.Guarded[n] = b.Holdings[i], b.Guarded[i]
			if b.Reservers != nil {
				next.Reservers[n] = b.Reservers[i]
			}
		}
		res, err := r.releaseOnce(ctx, next)
		if err != nil {
			return nil, err
		}
		for n, i := range again {
			out[i] = res[n]
		}
		idx = again
	}
}

// releaseOnce runs the release script once for b.
func (r *Releaser) releaseOnce(ctx context.Context, b Batch) ([]Outcome, error) {
	n := len(b.Holdings)
	keys := make([]string, n)
	flags := make([]byte, n)
	args := make([]any, 0, 3+2*n+len(b.Retire))
	args = append(args, n, nil)
	for i, h := range b.Holdings {
		keys[i] = h.Key
		flags[i] = releaseFlag(h.Kind, b.Guarded[i])
		args = append(args, h.Owner)
	}
	args[1] = string(flags)
	args = append(args, r.seenToken)
	args = appendReservers(args, b)
	for _, o := range b.Retire {
		args = append(args, o)
	}
	cctx, cancel := context.WithTimeout(ctx, r.Timeout)
	defer cancel()
	raw, err := releaseScript.Run(cctx, r.RDB, keys, args...).Text()
	if err != nil {
		return nil, fmt.Errorf("release batch of %d holdings: %w", n, err)
	}
	if len(raw) != n {
		return nil, fmt.Errorf("release batch: %d results for %d holdings", len(raw), n)
	}
	out := make([]Outcome, n)
	for i := range n {
		switch res := Outcome(raw[i]); res {
		case Released, AlreadyGone, OwnerChanged, handedBack:
			out[i] = res
		default:
			return nil, fmt.Errorf("release batch: result %q of %s is none the script gives", raw[i], keys[i])
		}
	}
	return out, nil
}

// ReleaseScriptSHA is the SHA-1 of the release script, as EVALSHA names it:
// a wire recorder tells the release calls from the other scripts' by it.
func ReleaseScriptSHA() string { return releaseScript.Hash() }

// appendReservers appends the count and the strings of the reserving tasks'
// task keys of the batch's guarded holdings.
func appendReservers(args []any, b Batch) []any {
	at := len(args)
	args = append(args, 0)
	c := 0
	for i, ids := range b.Reservers {
		if len(ids) == 0 || !b.Guarded[i] {
			continue
		}
		var sb strings.Builder
		sb.WriteString(strconv.Itoa(i + 1))
		for _, id := range ids {
			sb.WriteString(" " + judge.TaskKeyPrefix + id)
		}
		args = append(args, sb.String())
		c++
	}
	args[at] = c
	return args
}

// Without is the batch less the holdings leave marks, in order; the owners
// to retire stay.
func (b Batch) Without(leave []bool) Batch {
	out := Batch{Retire: b.Retire}
	for n, h := range b.Holdings {
		if leave[n] {
			continue
		}
		out.Holdings = append(out.Holdings, h)
		out.Guarded = append(out.Guarded, b.Guarded[n])
		if b.Reservers != nil {
			out.Reservers = append(out.Reservers, b.Reservers[n])
		}
	}
	return out
}
