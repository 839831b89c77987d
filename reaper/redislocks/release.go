package redislocks

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
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

	// CallHoldings is the work one release call may take, in holdings
	// (redis.release_call_holdings; 0: DefaultCallHoldings): release_call.go.
	CallHoldings int

	// seenToken names the task locks seen that RememberSeen stored.
	seenToken string
	// registry holds the registry sizes of the guarded owners, as BatchEnds
	// read them, for the calls' budget of work.
	registry map[string]int64
}

// Batch is one call of the release script.
type Batch struct {
	Holdings []judge.Holding
	// Guarded parallels Holdings: release only while the owner took no new task.
	Guarded []bool
	// Reservers lists, by lock key (the pass gives them for the guarded
	// shared memberships' keys), the incomplete tasks that reserve the
	// key's resource: a guarded holding of the key is released only while
	// its owner holds none of their task locks. Each key's list goes to a
	// call once, however many of the call's holdings are of that key.
	Reservers map[string][]Reserver
	// Retire names the owners judged dead or gone in this batch.
	Retire []string
}

// Reserver is an incomplete task reserving a resource, as the release
// checks it: the task's id, and the owner (or "") whose own lock of the task
// the snapshot saw and the pass does not keep: for that owner the task is no
// new task, and its lock does not hold the owner's membership back.
type Reserver struct {
	ID       string
	StaleFor string
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
	// TooManyReservers: more tasks reserve the holding's resource than one
	// call may check (ReserverCallLimit of the call's budget); left alone,
	// untouched, for a later pass.
	TooManyReservers Outcome = 'm'
	// StillHeld: a call failed (a timeout, a lost connection) and the
	// holding was read again after it: it is still held.
	StillHeld Outcome = 'h'
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

// Release runs one batch and returns one Outcome per holding. A call takes
// the holdings that fit its budget of work (fitCall: holdings, registries,
// reserving tasks), in order, and the rest go to further calls, each run
// after the one before has written: a key an earlier call released is gone
// for the holdings of the later ones, as it is within a call. A guarded
// holding whose resource alone has more reserving tasks than a call may
// check is TooManyReservers, sent to no call. The holdings the script hands
// back (its SSCAN pages ran out before their owner's new-task check ended)
// go to a further call too, as many as it takes: each call settles at least
// its first guarded owner. The owners to retire go with the call that takes
// the last holding then pending, once their registries have lost every
// entry the batch releases (the holdings of an owner judged dead or gone are
// not guarded, unless shared: only a shared membership's check can hand it
// back, after that call, and the owner is then retired by a later pass).
//
// When a call fails, the holdings it was given are read again (settle):
// a script runs whole or not at all, so what is no longer held is
// Released, what is still held StillHeld; the outcomes of the calls before
// stand, and the holdings no call was made for have none (zero). The
// outcomes so known come back with the error.
func (r *Releaser) Release(ctx context.Context, b Batch) ([]Outcome, error) {
	if len(b.Holdings) == 0 && len(b.Retire) == 0 {
		return nil, nil
	}
	out := make([]Outcome, len(b.Holdings))
	pending := make([]int, len(b.Holdings))
	for i := range pending {
		pending[i] = i
	}
	retire := b.Retire
	for len(pending) > 0 || len(retire) > 0 {
		now, later := r.fitCall(b, pending, out)
		if len(now) == 0 && len(retire) == 0 {
			break
		}
		call := b.subset(now)
		if len(later) == 0 {
			call.Retire, retire = retire, nil
		}
		res, err := r.releaseOnce(ctx, call)
		if err != nil {
			r.settle(ctx, call, now, out)
			return out, err
		}
		var back []int
		for n, i := range now {
			if res[n] == handedBack {
				back = append(back, i)
			} else {
				out[i] = res[n]
			}
		}
		if len(back) > 0 && len(back) == len(now) {
			return nil, fmt.Errorf("release batch: the script handed back all %d holdings it was given", len(now))
		}
		pending = append(back, later...)
		slices.Sort(pending)
	}
	return out, nil
}

// subset is the batch's holdings at idx, with the reserving tasks of their
// keys as the call sends them (callReservers), and no owner to retire.
func (b Batch) subset(idx []int) Batch {
	out := Batch{Holdings: make([]judge.Holding, len(idx)), Guarded: make([]bool, len(idx))}
	owners := map[string]map[string]bool{}
	for n, i := range idx {
		h := b.Holdings[i]
		out.Holdings[n], out.Guarded[n] = h, b.Guarded[i]
		if _, ok := b.Reservers[h.Key]; ok && b.Guarded[i] {
			if owners[h.Key] == nil {
				owners[h.Key] = map[string]bool{}
			}
			owners[h.Key][h.Owner] = true
		}
	}
	for key, o := range owners {
		if out.Reservers == nil {
			out.Reservers = map[string][]Reserver{}
		}
		out.Reservers[key] = callReservers(b.Reservers[key], o)
	}
	return out
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

// appendReservers appends the reserving tasks of the batch's keys: their
// count, then for each key the key, the count of its tasks' task keys and
// those, then the count of its stale pairs and those (a task key and the
// owner for whom it is no new task).
func appendReservers(args []any, b Batch) []any {
	args = append(args, len(b.Reservers))
	for key, rs := range b.Reservers {
		args = append(args, key, len(rs))
		stale := 0
		for _, r := range rs {
			args = append(args, judge.TaskKeyPrefix+r.ID)
			if r.StaleFor != "" {
				stale++
			}
		}
		args = append(args, stale)
		for _, r := range rs {
			if r.StaleFor != "" {
				args = append(args, judge.TaskKeyPrefix+r.ID, r.StaleFor)
			}
		}
	}
	return args
}

// Without is the batch less the holdings leave marks, in order; the owners
// to retire and the reserving tasks stay.
func (b Batch) Without(leave []bool) Batch {
	out := Batch{Retire: b.Retire, Reservers: b.Reservers}
	for n, h := range b.Holdings {
		if leave[n] {
			continue
		}
		out.Holdings = append(out.Holdings, h)
		out.Guarded = append(out.Guarded, b.Guarded[n])
	}
	return out
}
