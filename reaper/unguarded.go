package reaper

import (
	"cmp"
	"slices"
	"strings"

	"github.com/lock-reaper/lock-reaper/reaper/judge"
)

// unguarded lists what task t reserves, in record order, with every holder
// of each resource other than worker, the task's own: with the task lock
// gone, such a holder may be running beside the task. The judge decides
// that a task is unprotected (its lost task table); this list only shows
// the operator what is at stake, and no write rests on it. holders is
// resourceHolders of the snapshot.
func unguarded(t judge.Task, worker string, holders map[string][]ResourceHolder) []UnguardedResource {
	reserved := judge.Reservations(t.Reserved)
	out := make([]UnguardedResource, len(reserved))
	listed := make(map[string]bool, len(reserved))
	for i, r := range reserved {
		out[i] = UnguardedResource{Resource: r.Resource, Need: r.Kind, OtherHolders: []ResourceHolder{}}
		// A resource reserved both ways lists its holders once, at its
		// first reservation.
		if listed[r.Resource] {
			continue
		}
		listed[r.Resource] = true
		for _, h := range holders[r.Resource] {
			if h.Owner != worker {
				out[i].OtherHolders = append(out[i].OtherHolders, h)
			}
		}
		slices.SortFunc(out[i].OtherHolders, func(a, b ResourceHolder) int {
			return cmp.Or(strings.Compare(a.Owner, b.Owner), cmp.Compare(a.Kind, b.Kind))
		})
	}
	return out
}

// resourceHolders lists the holders of each resource of the snapshot.
func resourceHolders(holdings []judge.Holding) map[string][]ResourceHolder {
	out := map[string][]ResourceHolder{}
	for i := range holdings {
		if h := &holdings[i]; h.Kind != judge.KindTask {
			out[h.Resource()] = append(out[h.Resource()], ResourceHolder{Owner: h.Owner, Kind: h.Kind})
		}
	}
	return out
}

// unguardedOf is, by task id, what each unprotected task of tasks reserves
// and who else holds it; nil when no task is unprotected. The holders are
// gathered once, and only when a task asks: a Redis that lost its keys
// makes every running task unprotected at once.
func unguardedOf(tasks []judge.TaskJudgement, rows map[string]judge.Task, holdings []judge.Holding) map[string][]UnguardedResource {
	var out map[string][]UnguardedResource
	var holders map[string][]ResourceHolder
	for i := range tasks {
		tj := &tasks[i]
		if tj.Verdict != judge.VerdictUnprotected {
			continue
		}
		if holders == nil {
			out, holders = map[string][]UnguardedResource{}, resourceHolders(holdings)
		}
		out[tj.ID] = unguarded(rows[tj.ID], tj.Owner, holders)
	}
	return out
}
