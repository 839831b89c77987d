package sim

import (
	"slices"
	"strings"
)

// DefaultDomainID is the pulp_id of the default domain row that every
// pulpcore installation (and pulpschema) has.
const DefaultDomainID = "00000000-0000-4000-8000-000000000001"

// DomainPRN is the resource name of a domain; every task shares it.
func DomainPRN(domainID string) string { return "prn:core.domain:" + domainID }

// RepositoryPRN is the resource name of an RPM repository.
func RepositoryPRN(repoID string) string { return "prn:rpm.rpmrepository:" + repoID }

// TaskSpec describes a task to create: its name and the resources it reserves.
// Exclusive and Shared hold plain resource names; the domain's PRN is added
// to Shared by whoever creates the task unless it is already reserved.
type TaskSpec struct {
	// Name is core_task.name; empty means a name derived from the reservation.
	Name      string
	Exclusive []string
	Shared    []string
	// DomainID is the task's pulp_domain_id; empty means DefaultDomainID.
	DomainID string
}

// withDomain returns the spec with its domain filled in and the domain's PRN
// reserved (shared), as pulpcore's dispatch does for every task.
func (s TaskSpec) withDomain() TaskSpec {
	if s.DomainID == "" {
		s.DomainID = DefaultDomainID
	}
	d := DomainPRN(s.DomainID)
	if !slices.Contains(s.Exclusive, d) && !slices.Contains(s.Shared, d) {
		s.Shared = append(slices.Clip(s.Shared), d)
	}
	if s.Name == "" {
		s.Name = "sim.task"
	}
	return s
}

// Record is the task's core_task.reserved_resources_record.
func (s TaskSpec) Record() []string { return ReservedResources(s.Exclusive, s.Shared) }

// ReservedResources builds a reserved_resources_record: exclusive names plain,
// shared ones as shared:<name>.
func ReservedResources(exclusive, shared []string) []string {
	out := make([]string, 0, len(exclusive)+len(shared))
	out = append(out, exclusive...)
	for _, r := range shared {
		out = append(out, SharedPrefix+r)
	}
	return out
}

// SplitReserved splits a reserved_resources_record into exclusive and shared
// resource names, the way pulpcore's extract_task_resources does.
func SplitReserved(record []string) (exclusive, shared []string) {
	for _, r := range record {
		if name, ok := strings.CutPrefix(r, SharedPrefix); ok {
			shared = append(shared, name)
		} else {
			exclusive = append(exclusive, r)
		}
	}
	return exclusive, shared
}

// layout is a task's lock keys in the order both scripts expect: the task
// key, the exclusive keys sorted, then the shared keys sorted, with the
// resource names of the resource keys.
type layout struct {
	keys       []string
	names      []string // names[i] is the resource of keys[i+1]
	nExclusive int
}

// lockLayout builds a task's layout. Duplicates are dropped, and a resource
// reserved both ways is kept only as exclusive: the acquire script would
// otherwise SET and then SADD the same key and fail halfway.
func lockLayout(taskID string, exclusive, shared []string) layout {
	ex := slices.Compact(slices.Sorted(slices.Values(exclusive)))
	sh := make([]string, 0, len(shared))
	for _, r := range slices.Compact(slices.Sorted(slices.Values(shared))) {
		if _, dup := slices.BinarySearch(ex, r); !dup {
			sh = append(sh, r)
		}
	}
	l := layout{keys: make([]string, 0, 1+len(ex)+len(sh)), names: append(ex, sh...), nExclusive: len(ex)}
	l.keys = append(l.keys, TaskKey(taskID))
	for _, r := range l.names {
		l.keys = append(l.keys, ResourceKey(r))
	}
	return l
}

// args is the scripts' ARGV: owner, number of exclusive keys, resource names.
func (l layout) args(owner string) []any {
	args := make([]any, 0, 2+len(l.names))
	args = append(args, owner, l.nExclusive)
	for _, n := range l.names {
		args = append(args, n)
	}
	return args
}

// kind tells what keys[i] is.
func (l layout) kind(i int) HoldingKind {
	switch {
	case i == 0:
		return KindTask
	case i <= l.nExclusive:
		return KindExclusive
	}
	return KindShared
}
