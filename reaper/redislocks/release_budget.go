package redislocks

import (
	"context"
	"log/slog"

	"github.com/lock-reaper/lock-reaper/reaper/judge"
)

// BatchEnds readies the registries of the guarded owners among the
// holdings to release (todo, indexes of holdings in release order) for the release script's
// new-task check, and returns where each batch ends. A registry of more
// than one SSCAN page is pruned first, a page per call; the batches are then
// cut at batchSize holdings, and earlier when their work (release_call.go:
// a holding each, and the registries of their guarded owners) would pass
// the call's budget, or their guarded owners' registries registryCallBudget
// entries together (a batch starts with at least one holding whatever its
// owner's size). Release may still cut a batch into several calls, by the
// reserving tasks read just before it.
func (r *Releaser) BatchEnds(ctx context.Context, holdings []judge.Judgement, todo []int, batchSize int) (func(start int) int, error) {
	owners := GuardedOwners(holdings, todo)
	sizes, large, err := registrySizes(ctx, r.RDB, r.Timeout, owners)
	if err != nil {
		return nil, err
	}
	for _, o := range large {
		pruned, _, err := pruneRegistry(context.WithoutCancel(ctx), r.RDB, r.Timeout, o, false)
		if err != nil {
			return nil, err
		}
		if pruned > 0 {
			r.Log.Info("pruned owner registry entries of keys that are gone", slog.String("owner", o), slog.Int64("entries", pruned))
		}
	}
	if len(large) > 0 {
		after, _, err := registrySizes(ctx, r.RDB, r.Timeout, large)
		if err != nil {
			return nil, err
		}
		for o, n := range after {
			sizes[o] = n
		}
	}
	r.registry = sizes
	budget := r.callBudget()
	return func(start int) int {
		var walked int64
		work := 0
		inBatch := map[string]bool{}
		end := start
		for end < len(todo) && end-start < batchSize {
			jd := holdings[todo[end]]
			cost := 1
			if judge.Guarded(jd) && !inBatch[jd.Owner] {
				entries := sizes[jd.Owner]
				if end > start && walked+entries > registryCallBudget {
					break
				}
				cost += registryWork(entries, budget)
				if end > start && work+cost > budget {
					break
				}
				inBatch[jd.Owner] = true
				walked += entries
			} else if end > start && work+cost > budget {
				break
			}
			work += cost
			end++
		}
		return end
	}, nil
}

// GuardedOwners lists the owners of the guarded holdings among todo
// (indexes of holdings), once each, in the order they come.
func GuardedOwners(holdings []judge.Judgement, todo []int) []string {
	var owners []string
	listed := map[string]bool{}
	for _, i := range todo {
		if jd := holdings[i]; judge.Guarded(jd) && !listed[jd.Owner] {
			listed[jd.Owner] = true
			owners = append(owners, jd.Owner)
		}
	}
	return owners
}
