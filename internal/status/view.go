package status

import (
	"math/bits"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/lock-reaper/lock-reaper/heartbeat"
	"github.com/lock-reaper/lock-reaper/internal/doctor"
	"github.com/lock-reaper/lock-reaper/reaper"
	"github.com/lock-reaper/lock-reaper/reaper/history"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
)

// View is one finished picture the pages are served from: an inspection of
// one snapshot (every holding judged) and what was derived from it once.
// Nothing changes a View once it is published; a page view only reads it.
type View struct {
	In *reaper.Inspection
	// Report is the pass's report; nil when the view is of a read-only
	// inspection (`lock-reaper status`).
	Report *reaper.Report
	// Taken is when the snapshot was read, on this process's clock; the age
	// every page shows is measured from it.
	Taken time.Time
	// NextPass is when the next pass or inspection is due; zero if unknown.
	NextPass time.Time
	// Queue is the waiting, unclaimed tasks in Pulp's fetch order (at most
	// Options.MaxWaiting of them); QueueTotal counts all of them.
	Queue      []Queued
	QueueTotal int
	// QueueError says why the waiting tasks could not be read.
	QueueError string
	// Blocked counts the queue's blocked tasks (blockedOf): the headline's
	// "N of M waiting tasks are blocked".
	Blocked int
	// Causes group the queue by the owner of the first lock in each task's
	// way, the blocking ones first (causesOf).
	Causes []Cause
	// Stale counts the holdings a pass releases or confirms, by verdict.
	Stale []VerdictCount
	// Owners are the lock owners with their counts by verdict, by name.
	Owners []OwnerRow
	// OwnersByLiveness counts the lock owners by liveness.
	OwnersByLiveness map[string]int
	// OldestStale is the holding whose evidence is oldest, among the stale.
	OldestStale *Staleness
	// Passes are the last passes of any reaper over the last day, from the
	// history of passes in Redis (reaper/history), newest first, as read
	// when the view was built (PassesRead); PassesError says why they could
	// not be read. A CronJob's passes are only known from there.
	// PassesSkipped says which entries the read left out: over the size an
	// entry may have, no pass, or past the size of a whole read.
	Passes        []history.Entry
	PassesRead    time.Time
	PassesError   string
	PassesSkipped string
	Doctor        *doctor.Report
	// released marks, by position in In.Plan.Holdings, the holdings the
	// pass released: a bit each, where a map by key and owner cost a
	// dead owner's incident tens of megabytes.
	released []uint64
	// byKey is every position in In.Plan.Holdings, in key order (positions
	// of one key ascending), searched for a key's holdings: a map of a
	// slice per key held a second copy of the keys' headers and a slice
	// each.
	byKey []int32
	// holdingTask is the task each holding is held for, by position.
	ownerIndex map[string]int
	// ShedAt is when the view was shed (Server.Shed): it keeps its
	// summaries, and holdingCount and taskCount, not its holdings.
	ShedAt *time.Time
	// TasksUpdated counts the tasks of the plan the view's pass updated,
	// which Tasks leaves out.
	TasksUpdated            int
	holdingCount, taskCount int
	// number tells this view's snapshot from the others' (Server.views):
	// what the task page's explanations are kept by. A copy of the view
	// with doctor's results or a later report keeps it.
	number uint64
}

// VerdictCount is one verdict and how many holdings have it.
type VerdictCount struct {
	Verdict judge.Verdict
	Count   int
}

// OwnerRow is one lock owner: the plan's report of it and its counts.
type OwnerRow struct {
	judge.OwnerReport

	ByVerdict map[judge.Verdict]int
	Stale     int
}

// Staleness is how long a stale holding's evidence has said so: how long
// its owner has not beaten, or its task has been finished.
type Staleness struct {
	Key, Owner string
	Verdict    judge.Verdict
	Age        time.Duration
	Why        string
}

// Age is how old the snapshot is at now.
func (v *View) Age(now time.Time) time.Duration { return now.Sub(v.Taken) }

// Now is the database clock of the snapshot.
func (v *View) Now() time.Time { return v.In.Snapshot.Now }

// Guards are the guards that held work back: the pass's, or those the plan
// of an inspection would trip.
func (v *View) Guards() []reaper.Guard {
	if v.Report != nil {
		return v.Report.Guards
	}
	return reaper.GuardsOf(v.In.Plan.Guards)
}

// Kubernetes is what the snapshot's pass read from Kubernetes; nil when off.
func (v *View) Kubernetes() *reaper.KubernetesReport {
	if v.Report != nil && v.Report.Kubernetes != nil {
		return v.Report.Kubernetes
	}
	return v.In.Kubernetes
}

// Tasks are the lost, orphaned and stuck tasks the plan judged, less those
// the view's pass updated (dropUpdated).
func (v *View) Tasks() []judge.TaskJudgement { return v.In.Plan.Tasks }

// Holdings are the plan's judgements, in the order a pass handles them.
func (v *View) Holdings() []judge.Judgement { return v.In.Plan.Holdings }

// index builds what the pages look holdings up by, marks what the view's
// pass released (released, from releasedBy), and counts the rest: the pages
// show the state after the pass, so a holding it released is no longer
// stale, nor its owner's.
func (v *View) index(released []heldBy) {
	hs := v.In.Plan.Holdings
	v.byKey = make([]int32, len(hs))
	for i := range v.byKey {
		v.byKey[i] = int32(i)
	}
	slices.SortStableFunc(v.byKey, func(a, b int32) int { return strings.Compare(hs[a].Key, hs[b].Key) })
	v.markReleased(released)
	stale := map[judge.Verdict]int{}
	owners := map[string]*OwnerRow{}
	for _, o := range v.In.Plan.LockOwners {
		owners[o.Name] = &OwnerRow{OwnerReport: o, ByVerdict: map[judge.Verdict]int{}}
	}
	for i := range hs {
		jd := &hs[i]
		if v.releasedAt(i) {
			continue
		}
		o := owners[jd.Owner]
		if o == nil {
			o = &OwnerRow{OwnerReport: judge.OwnerReport{Name: jd.Owner, Liveness: v.In.Owner(jd.Owner).Liveness.String()}, ByVerdict: map[judge.Verdict]int{}}
			owners[jd.Owner] = o
		}
		o.ByVerdict[jd.Verdict]++
		if !jd.Verdict.Finding() {
			continue
		}
		o.Stale++
		stale[jd.Verdict]++
		if s, ok := staleness(jd); ok && (v.OldestStale == nil || s.Age > v.OldestStale.Age) {
			v.OldestStale = &s
		}
	}
	for verdict, n := range stale {
		v.Stale = append(v.Stale, VerdictCount{verdict, n})
	}
	sort.Slice(v.Stale, func(a, b int) bool { return v.Stale[a].Verdict < v.Stale[b].Verdict })
	v.OwnersByLiveness = map[string]int{}
	v.ownerIndex = make(map[string]int, len(owners))
	for _, o := range owners {
		v.Owners = append(v.Owners, *o)
		// An owner whose every holding the pass released holds nothing now.
		if len(o.ByVerdict) > 0 {
			v.OwnersByLiveness[o.Liveness]++
		}
	}
	sort.Slice(v.Owners, func(a, b int) bool { return v.Owners[a].Name < v.Owners[b].Name })
	for i, o := range v.Owners {
		v.ownerIndex[o.Name] = i
	}
}

// staleness is a stale holding's age: that of its finished task, its
// suspicion, or its owner's last heartbeat, the first known.
func staleness(jd *judge.Judgement) (Staleness, bool) {
	e := jd.Evidence()
	s := Staleness{Key: jd.Key, Owner: jd.Owner, Verdict: jd.Verdict}
	switch {
	case e.FinishedAge != nil:
		s.Age, s.Why = time.Duration(*e.FinishedAge), "its task finished"
	case e.HeartbeatAge != nil && e.OwnerLiveness != heartbeat.Alive:
		s.Age, s.Why = time.Duration(*e.HeartbeatAge), "its owner's last heartbeat"
	default:
		return s, false
	}
	return s, true
}

// heldBy names one holding: its key and owner.
type heldBy struct{ Key, Owner string }

// releasedBy lists the holdings a pass released (or found gone), from its
// report: taken before the report's findings are let go, since they point
// into the pass's own judgement of every holding.
func releasedBy(rep *reaper.Report) []heldBy {
	if rep == nil || rep.Mode == reaper.ModeAudit {
		return nil
	}
	var out []heldBy
	for _, f := range rep.Findings {
		if f.Result == reaper.ResultReleased || f.Result == reaper.ResultAlreadyGone {
			out = append(out, heldBy{f.Key, f.Owner})
		}
	}
	return out
}

// updatedBy lists the tasks a pass updated (canceled, requeued, failed),
// by id, from its report: taken, like releasedBy, before the report's lists
// are let go.
func updatedBy(rep *reaper.Report) []string {
	if rep == nil || rep.Mode == reaper.ModeAudit {
		return nil
	}
	var out []string
	for _, t := range rep.Tasks {
		if t.Result == reaper.ResultUpdated && t.TaskJudgement != nil {
			out = append(out, t.ID)
		}
	}
	return out
}

// dropUpdated takes the tasks the view's pass updated out of the plan's
// lost, orphaned and stuck tasks, in place: the pages show the state after
// the pass, where such a task is no longer lost but canceled or requeued,
// and "the next pass cancels it" beside its new state said the opposite.
// The plan is the view's own (judged again from the pass's snapshot); no
// copy is made, so the view costs no more than before.
func (v *View) dropUpdated(ids []string) {
	if len(ids) == 0 {
		return
	}
	done := make(map[string]bool, len(ids))
	for _, id := range ids {
		done[id] = true
	}
	before := len(v.In.Plan.Tasks)
	v.In.Plan.Tasks = slices.DeleteFunc(v.In.Plan.Tasks, func(t judge.TaskJudgement) bool { return done[t.ID] })
	v.TasksUpdated = before - len(v.In.Plan.Tasks)
}

// markReleased notes the holdings the view's pass released: the snapshot
// was read before the pass acted, so they still appear in it. index calls
// it once byKey is sorted, before counting.
func (v *View) markReleased(released []heldBy) {
	for _, h := range released {
		if i, ok := v.position(h.Key, h.Owner); ok {
			if v.released == nil {
				v.released = make([]uint64, (len(v.In.Plan.Holdings)+63)/64)
			}
			v.released[i/64] |= 1 << (i % 64)
		}
	}
}

// Released says the view's pass released the holding.
func (v *View) Released(key, owner string) bool {
	i, ok := v.position(key, owner)
	return ok && v.releasedAt(i)
}

// releasedAt says the view's pass released the holding at position i.
func (v *View) releasedAt(i int) bool {
	return v.released != nil && v.released[i/64]&(1<<(i%64)) != 0
}

// ReleasedCount is how many holdings of the snapshot the view's pass
// released.
func (v *View) ReleasedCount() int {
	n := 0
	for _, w := range v.released {
		n += bits.OnesCount64(w)
	}
	return n
}

// Current are the holdings still held after the view's pass, as a count.
func (v *View) Current() int { return len(v.In.Plan.Holdings) - v.ReleasedCount() }

// holdingsAfter drops from hs (judgements of this view) those the view's
// pass released: what explain is asked on, so that a task page does not
// name a released holder as holding anything.
func (v *View) holdingsAfter(hs []judge.Judgement) []judge.Judgement {
	if v.released == nil {
		return hs
	}
	out := hs[:0:0]
	for _, jd := range hs {
		if !v.Released(jd.Key, jd.Owner) {
			out = append(out, jd)
		}
	}
	return out
}

// position is where the holding of key by owner is in In.Plan.Holdings.
func (v *View) position(key, owner string) (int, bool) {
	for _, i := range v.positionsOf(key) {
		if v.In.Plan.Holdings[i].Owner == owner {
			return int(i), true
		}
	}
	return 0, false
}

// positionsOf lists the positions in In.Plan.Holdings of key's holdings,
// ascending.
func (v *View) positionsOf(key string) []int32 {
	hs := v.In.Plan.Holdings
	from, _ := slices.BinarySearchFunc(v.byKey, key, func(i int32, k string) int { return strings.Compare(hs[i].Key, k) })
	to := from
	for to < len(v.byKey) && hs[v.byKey[to]].Key == key {
		to++
	}
	return v.byKey[from:to]
}

// summaryOf is a pass's report as a view keeps it: what the pages show of
// the pass (its mode, start, guards, Kubernetes), without its lists. The
// findings point into the pass's own judgements; kept, they held a second
// judgement of every holding beside the view's through the next pass.
func summaryOf(rep *reaper.Report) *reaper.Report {
	if rep == nil {
		return nil
	}
	s := *rep
	s.LockOwners, s.Findings, s.Tasks, s.Ignored, s.ReleaseDelays = nil, nil, nil, nil, nil
	return &s
}

// Owner is the row of a lock owner; ok is false when it holds nothing.
func (v *View) Owner(name string) (OwnerRow, bool) {
	i, ok := v.ownerIndex[name]
	if !ok {
		return OwnerRow{}, false
	}
	return v.Owners[i], true
}

// holdingsOf returns the judgements of the holdings of key.
func (v *View) holdingsOf(key string) []judge.Judgement {
	at := v.positionsOf(key)
	out := make([]judge.Judgement, len(at))
	for i, n := range at {
		out[i] = v.In.Plan.Holdings[n]
	}
	return out
}

// relevant returns the judgements that matter to a task reserving record:
// its own task lock and every holding of the resources it reserves.
func (v *View) relevant(taskID string, record []string) []judge.Judgement {
	out := v.holdingsOf(judge.TaskKeyPrefix + taskID)
	seen := map[string]bool{}
	for _, n := range judge.Reservations(record) {
		if seen[n.Resource] {
			continue
		}
		seen[n.Resource] = true
		out = append(out, v.holdingsOf(judge.ResourceKeyPrefix+n.Resource)...)
	}
	return out
}
