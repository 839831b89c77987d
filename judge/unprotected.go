package judge

import (
	"cmp"
	"slices"
	"strings"
)

// UnguardedResource is a resource an unprotected task reserves, with every
// current holder of it other than the task's own worker: with the task lock
// gone, such a holder may be running beside the task.
type UnguardedResource struct {
	Resource string
	// Need is how the task reserved it: exclusive or shared.
	Need         Kind
	OtherHolders []ResourceHolder
}

// ResourceHolder is one holding of a resource.
type ResourceHolder struct {
	Owner string
	Kind  Kind
}

// unguarded lists what task t reserves, in record order, with the other
// holders of each: holdings whose owner is not worker.
func (j *judge) unguarded(t Task, worker string) []UnguardedResource {
	if j.holders == nil {
		j.holders = resourceHolders(j.snap.Holdings)
	}
	reserved := Reservations(t.Reserved)
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
		for _, h := range j.holders[r.Resource] {
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

// resourceHolders lists the holders of each resource, gathered once when an
// unprotected task first asks: a Redis that lost its keys makes every
// running task unprotected at once.
func resourceHolders(holdings []Holding) map[string][]ResourceHolder {
	out := map[string][]ResourceHolder{}
	for i := range holdings {
		if h := &holdings[i]; h.Kind != KindTask {
			out[h.Resource()] = append(out[h.Resource()], ResourceHolder{Owner: h.Owner, Kind: h.Kind})
		}
	}
	return out
}
