package judge

import (
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/lock-reaper/lock-reaper/heartbeat"
)

// Evidence is what a verdict rested on, for the report and the logs.
type Evidence struct {
	OwnerLiveness heartbeat.Liveness
	// HeartbeatAge is the age of the owner's newest heartbeat (absent when gone).
	HeartbeatAge *Duration
	// TaskState is the state of the task the holding is for ("" when unknown).
	TaskState string
	// FinishedAge is how long ago the task finished.
	FinishedAge *Duration
	// AppLock names the process the task is claimed by, and its liveness.
	AppLock         string
	AppLockLiveness *heartbeat.Liveness
	// Via is the task lock whose verdict a resource holding inherited, or
	// which justified it.
	Via string
	// Kubernetes is the owner's pod evidence, when the pass read pods.
	Kubernetes *heartbeat.PodEvidence
}

// Judgement is the verdict on one holding.
type Judgement struct {
	Holding
	Verdict Verdict
	Action  Action
	// facts is the evidence but for its Via and FinishedAge (see
	// judgedFacts), nil for a judgement the plan only counts. Nothing
	// writes through it; SetEvidence replaces it.
	facts *judgedFacts
	via   string
	// finishedFor is the evidence's FinishedAge, kept out of facts so
	// that the judgements of finished tasks share theirs too: each finished
	// task has an age of its own, and a worker that never released its
	// locks leaves a hundred thousand (0: none; an age of 0 is kept as
	// 1ns).
	finishedFor time.Duration
	// FirstSeen is when a suspect was first sighted (database clock).
	FirstSeen *time.Time
	// Deferred says why a release was held back this pass.
	Deferred string
}

// TaskJudgement is the verdict on one lost, orphaned or stuck task. Its
// fields are in the order a report writes them.
type TaskJudgement struct {
	ID      string
	Name    string
	Verdict Verdict
	Action  Action
	// Owner names the worker the task was lost by.
	Owner string
	// Observed state and claim: the update only applies while both still hold.
	AppLockID   string
	StateBefore string
	StateAfter  string
	// ClearClaim sets app_lock_id to NULL (a requeue); otherwise the task
	// is finished, with a message the writer makes (pulpdb.TaskReason).
	ClearClaim bool
	// LockHeld says an unprotected task's worker holds its task lock: what
	// Redis lacks is one of its resource locks.
	LockHeld bool
	Deferred string
	// FirstSeen is when a stuck claim was first sighted (database clock).
	FirstSeen *time.Time
	// NotStartedFor is how long a claimed-not-started task has been seen
	// claimed and not started: at least this long, since pulpcore keeps
	// no time of the claim.
	NotStartedFor time.Duration
	// Stranded is a stranded task's evidence: the versions it needs, and
	// which online workers have them.
	Stranded *Stranded
	// AfterRelease is the task lock key that must be gone before the
	// update, "" for none: a requeued task whose lock remains would block
	// its next worker.
	AfterRelease string
}

// Guard says why a pass held back work: the guard, and what it counted,
// which the report words (reaper.GuardReason).
type Guard struct {
	Name string
	// Count is what the mass-death guard counted, over MaxDeadFraction.
	Count           MassDeathCount
	MaxDeadFraction float64
	// Wanted is the work a per-pass limit found, Limit the limit.
	Wanted, Limit int
	// Owner is the owner a break-glass release refused (alive-owner).
	Owner heartbeat.Owner
	// Motion is what the second reads of the heartbeats held back
	// (heartbeat-stall, heartbeat-recheck).
	Motion MotionCount
}

// MotionCount is what a guard of the second reads counted: the rows it
// held, and of the largest group of rows whose heartbeats stopped within
// a period of each other, its size and how many of it came back.
type MotionCount struct {
	Held, Group, Back int
}

// Plan is the judge's answer for one snapshot: what to release, what to
// update, what to remember.
type Plan struct {
	Now time.Time
	// Holdings lists the judgements of every holding (All) or of the
	// findings only (Findings): the holdings neither healthy nor
	// justified, which are all a pass acts on or reports.
	Holdings []Judgement
	Tasks    []TaskJudgement
	// FleetOwners is every name of a core_appstatus row, with its liveness.
	FleetOwners []heartbeat.Owner
	// ByVerdict counts every holding judged, listed or not, by verdict.
	ByVerdict map[Verdict]int
	// LockOwners is every owner of a holding judged, by name, with its
	// liveness and how many holdings it has.
	LockOwners []OwnerReport
	// Suspects is the set to remember after this pass, before removing those
	// the pass released.
	Suspects map[SuspectKey]Suspect
	// SeenAlive is the mass-death guard's memory to keep after this pass
	// (see RememberAlive).
	SeenAlive map[string]SeenAlive
	Guards    []Guard
}

// countListed fills ByVerdict and Holders from the listed holdings, for a
// plan that lists every holding it judged.
func (p *Plan) countListed() {
	p.ByVerdict = map[Verdict]int{}
	byOwner := map[string]int{}
	records := map[string]*ownerRecord{}
	for _, jd := range p.Holdings {
		p.ByVerdict[jd.Verdict]++
		byOwner[jd.Owner]++
		if _, ok := records[jd.Owner]; !ok && jd.facts != nil {
			records[jd.Owner] = jd.facts.owner
		}
	}
	p.LockOwners = make([]OwnerReport, 0, len(byOwner))
	for _, name := range slices.Sorted(maps.Keys(byOwner)) {
		o := records[name]
		if o == nil {
			o = &ownerRecord{}
		}
		p.LockOwners = append(p.LockOwners, o.report(name, byOwner[name]))
	}
}

// OwnerReport is one lock owner seen in Redis, with its liveness.
type OwnerReport struct {
	Name         string
	Liveness     string
	HeartbeatAge *Duration
	Holdings     int
	// Kubernetes is the owner's pod evidence: pod, phase, container start,
	// restarts, and the rule that decided.
	Kubernetes *heartbeat.PodEvidence
}

// Duration is an age a verdict rested on; the report words it
// (reaper.Seconds).
type Duration time.Duration

func durationPtr(d time.Duration) *Duration { v := Duration(d); return &v }

// StaleHolder is the owner whose task lock of taskID the snapshot saw and
// this plan does not keep (it releases it, waits to confirm it, or defers
// its release), or "" when there is none. Such a task is no new task of
// that owner's: a shared membership it reserves is not the owner's since
// the snapshot, and the release of the membership does not wait for it.
// The plan lists its task locks first, in key order (sortJudgements).
func (p *Plan) StaleHolder(taskID string) string {
	key := TaskKeyPrefix + taskID
	i, found := slices.BinarySearchFunc(p.Holdings, key, func(jd Judgement, key string) int {
		if jd.Kind != KindTask {
			return 1
		}
		return strings.Compare(jd.Key, key)
	})
	for ; found && i < len(p.Holdings) && p.Holdings[i].Key == key; i++ {
		if jd := p.Holdings[i]; jd.Action != ActionKeep {
			return jd.Owner
		}
	}
	return ""
}
