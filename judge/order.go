package judge

import (
	"cmp"
	"encoding/binary"
	"math"
	"slices"
	"strings"
)

// CompareHoldings is the order a plan lists holdings in: task locks first,
// then by key and owner. The judge walks the snapshot in an order of its own
// (see index) and puts only what it lists in this one.
func CompareHoldings(a, b *Holding) int {
	if ta, tb := a.Kind == KindTask, b.Kind == KindTask; ta != tb {
		if ta {
			return -1
		}
		return 1
	}
	return compareKeyOwner(a, b)
}

func compareKeyOwner(a, b *Holding) int {
	if c := strings.Compare(a.Key, b.Key); c != 0 {
		return c
	}
	return strings.Compare(a.Owner, b.Owner)
}

// sortJudgements puts judgements in the order of CompareHoldings.
func sortJudgements(jds []Judgement) {
	slices.SortFunc(jds, func(a, b Judgement) int { return CompareHoldings(&a.Holding, &b.Holding) })
}

// placed is one holding's position in the snapshot, with the hash of its
// key's name that the judge's walk is ordered by and its owner's number.
type placed struct {
	hash uint32
	at   int32
	// owner is the owner's position in index.owners: the walk compares and
	// looks up owners by number, not by name.
	owner int32
}

// group is the task locks, or the resource holdings, of a snapshot as the
// judge walks them: ordered by the hash of the key's name, then by owner and
// key, with a directory from the hash's top bits to where they start. What
// the rules need of an order is only that a key's holdings, and one owner's
// holding of a key, be found at once: the directory finds the few holdings
// of a hash with one or two cache misses where a binary search of a few
// hundred thousand would take a dozen, and sorting hashes costs a fraction
// of comparing keys that share long prefixes
// (pulp:resource_lock:prn:rpm.rpmrepository: is 41 bytes). The snapshot is
// never reordered or copied. Two keys with one hash are told apart by the
// key itself.
type group struct {
	placed []placed
	// dir[b] is the first position whose hash's top bits are at least b;
	// shift takes a hash to its top bits.
	dir   []int32
	shift uint
}

// index is the snapshot's two groups, and its owners.
type index struct {
	tasks, resources group
	// owners are the names of the holdings' owners, sorted: numbered in
	// name order, owners compare as their names do.
	owners []string
}

func indexOf(hs []Holding) index {
	n := 0
	for i := range hs {
		if hs[i].Kind == KindTask {
			n++
		}
	}
	// Owners are numbered as first met, then renumbered in name order.
	number := map[string]int32{}
	var owners []string
	tasks, resources := make([]placed, 0, n), make([]placed, 0, len(hs)-n)
	for i := range hs {
		h := &hs[i]
		o, ok := number[h.Owner]
		if !ok {
			o = int32(len(owners))
			number[h.Owner] = o
			owners = append(owners, h.Owner)
		}
		p := placed{hash: nameHash(strings.TrimPrefix(h.Key, prefixOf(h.Kind))), at: int32(i), owner: o}
		if h.Kind == KindTask {
			tasks = append(tasks, p)
		} else {
			resources = append(resources, p)
		}
	}
	ix := index{owners: slices.Clone(owners)}
	slices.Sort(ix.owners)
	rank := make([]int32, len(owners))
	for r, name := range ix.owners {
		rank[number[name]] = int32(r)
	}
	// The groups are sorted apart, each its own slice.
	inParallel(func() { ix.tasks = groupOf(hs, tasks, rank) }, func() { ix.resources = groupOf(hs, resources, rank) })
	return ix
}

// groupOf orders ps, whose owners are numbered as first met; rank gives
// each such number its number in name order.
func groupOf(hs []Holding, ps []placed, rank []int32) group {
	for i := range ps {
		ps[i].owner = rank[ps[i].owner]
	}
	// Keys are compared only where hash and owner are the same (cmp.Or
	// would compute every comparison before it picks one).
	slices.SortFunc(ps, func(a, b placed) int {
		switch {
		case a.hash != b.hash:
			return cmp.Compare(a.hash, b.hash)
		case a.owner != b.owner:
			return cmp.Compare(a.owner, b.owner)
		}
		return strings.Compare(hs[a.at].Key, hs[b.at].Key)
	})
	// About four holdings per directory entry: a byte of directory for each.
	bits := uint(1)
	for 1<<(bits+2) < len(ps) {
		bits++
	}
	g := group{placed: ps, dir: make([]int32, 1<<bits+1), shift: 32 - bits}
	at := 0
	for b := range g.dir {
		for at < len(ps) && int(ps[at].hash>>g.shift) < b {
			at++
		}
		g.dir[b] = int32(at)
	}
	return g
}

// sameHash is the positions [from, to) of the holdings whose hash is hash.
// A shared resource of a busy fleet has a membership for each owner: the
// ends are found by binary search.
func (g group) sameHash(hash uint32) (from, to int) {
	b := hash >> g.shift
	bucket := g.placed[g.dir[b]:g.dir[b+1]]
	from, _ = slices.BinarySearchFunc(bucket, hash, comparePlaced)
	to, _ = slices.BinarySearchFunc(bucket, hash+1, comparePlaced)
	if hash == math.MaxUint32 {
		to = len(bucket)
	}
	return int(g.dir[b]) + from, int(g.dir[b]) + to
}

func comparePlaced(p placed, hash uint32) int { return cmp.Compare(p.hash, hash) }

// search returns the position in g of the holding of the key prefix+name
// held by owner (by number), or where it would be; the key is never built.
func (g group) search(hs []Holding, prefix, name string, owner int32) int {
	from, to := g.sameHash(nameHash(name))
	n, _ := slices.BinarySearchFunc(g.placed[from:to], owner, func(p placed, owner int32) int {
		if p.owner != owner {
			return cmp.Compare(p.owner, owner)
		}
		return compareKey(hs[p.at].Key, prefix, name)
	})
	return from + n
}

// holdersOf calls f with the position in g of each holding of the key
// prefix+name, of any owner: they share the key's hash.
func (g group) holdersOf(hs []Holding, prefix, name string, f func(n int)) {
	from, to := g.sameHash(nameHash(name))
	for n := from; n < to; n++ {
		if isKey(hs[g.placed[n].at].Key, prefix, name) {
			f(n)
		}
	}
}

// isKey says key is prefix+name.
func isKey(key, prefix, name string) bool {
	return len(key) == len(prefix)+len(name) && key[:len(prefix)] == prefix && key[len(prefix):] == name
}

// compareKey orders key against prefix+name as strings.
func compareKey(key, prefix, name string) int {
	if rest, ok := strings.CutPrefix(key, prefix); ok {
		return strings.Compare(rest, name)
	}
	return strings.Compare(key, prefix+name)
}

// prefixOf is the prefix of a holding's key that its hash leaves out: what
// every key of its kind starts with.
func prefixOf(k Kind) string {
	if k == KindTask {
		return TaskKeyPrefix
	}
	return ResourceKeyPrefix
}

// nameHash hashes a task id or resource name eight bytes at a time (FNV-1a's
// step on words, with a final mix): deterministic, so that one snapshot is
// walked in the same order every time it is judged, and cheap on the
// 36-byte ids and the longer names the holdings have.
func nameHash(s string) uint32 {
	const prime = 0x100000001b3
	h := uint64(14695981039346656037) ^ uint64(len(s))
	for ; len(s) >= 8; s = s[8:] {
		h = (h ^ binary.LittleEndian.Uint64([]byte(s[:8]))) * prime
	}
	for i := 0; i < len(s); i++ {
		h = (h ^ uint64(s[i])) * prime
	}
	h ^= h >> 32
	h *= 0x9e3779b97f4a7c15
	return uint32(h >> 32)
}
