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
	Resource string `json:"resource"`
	// Need is how the task reserved it: exclusive or shared.
	Need         Kind             `json:"need"`
	OtherHolders []ResourceHolder `json:"other_holders"`
}

// ResourceHolder is one holding of a resource.
type ResourceHolder struct {
	Owner string `json:"owner"`
	Kind  Kind   `json:"kind"`
}

// unguarded lists what task t reserves, in record order, with the other
// holders of each: holdings whose owner is not worker, found by the key's
// hash rather than by walking every holding, since a Redis that lost its
// keys makes every running task unprotected at once.
func (j *tasksPart) unguarded(t Task, worker string) []UnguardedResource {
	reserved := Reservations(t.Reserved)
	out := make([]UnguardedResource, len(reserved))
	listed := make(map[string]bool, len(reserved))
	resources := j.ix.resources
	for i, r := range reserved {
		out[i] = UnguardedResource{Resource: r.Resource, Need: r.Kind, OtherHolders: []ResourceHolder{}}
		if listed[r.Resource] {
			// A resource reserved both ways lists its holders once, at its
			// first reservation.
			continue
		}
		listed[r.Resource] = true
		resources.holdersOf(j.snap.Holdings, ResourceKeyPrefix, r.Resource, func(n int) {
			if h := &j.snap.Holdings[resources.placed[n].at]; h.Owner != worker {
				out[i].OtherHolders = append(out[i].OtherHolders, ResourceHolder{Owner: h.Owner, Kind: h.Kind})
			}
		})
		slices.SortFunc(out[i].OtherHolders, func(a, b ResourceHolder) int {
			return cmp.Or(strings.Compare(a.Owner, b.Owner), cmp.Compare(a.Kind, b.Kind))
		})
	}
	return out
}
