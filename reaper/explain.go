package reaper

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/lock-reaper/lock-reaper/judge"
	"github.com/lock-reaper/lock-reaper/pulpdb"
)

// Status sums up why a task is where it is.
type Status string

const (
	// StatusNotFound: no core_task row has the id.
	StatusNotFound Status = "not-found"
	// StatusFinished: the task is in a final state.
	StatusFinished Status = "finished"
	// StatusLost: running or canceling, its worker dead or its claim gone.
	StatusLost Status = "lost"
	// StatusOrphaned: waiting, claimed by a dead worker.
	StatusOrphaned Status = "orphaned"
	// StatusStuck: waiting, claimed by a live worker that holds no lock for it.
	StatusStuck Status = "stuck"
	// StatusRunning: running or canceling on a worker that is not dead.
	StatusRunning Status = "running"
	// StatusStarting: waiting, claimed by a live worker: about to run.
	StatusStarting Status = "starting"
	// StatusBlocked: a stale or suspect lock stands in its way; a pass will
	// release it (at once or once confirmed).
	StatusBlocked Status = "blocked"
	// StatusWaiting: a healthy lock or an older task goes first.
	StatusWaiting Status = "waiting"
	// StatusReady: nothing holds its resources and no older task needs them.
	StatusReady Status = "ready"
)

// Explanation says why one task waits, runs or was lost, from one
// inspection. It is what `lock-reaper explain --output json` prints.
type Explanation struct {
	TaskID string `json:"task_id"`
	// DBNow is the database clock every age was measured against.
	DBNow time.Time `json:"db_now"`
	// Task is the task's row; nil when it has none.
	Task *pulpdb.TaskRow `json:"task,omitempty"`
	// Claim is the process the task's app_lock_id points at.
	Claim *Process `json:"claim,omitempty"`
	// TaskLocks are the holdings of task:<id> (normally none or one).
	TaskLocks []Holder `json:"task_locks"`
	// Resources are the task's reservations and who holds each in Redis.
	Resources []ResourceNeed `json:"resources"`
	// Ahead are the older waiting tasks that need the same resources in a
	// conflicting way and therefore go first; AheadTotal counts all of them
	// when the inspection loaded only the first MaxAhead.
	Ahead      []TaskAhead `json:"ahead"`
	AheadTotal int         `json:"ahead_total"`
	// TaskVerdict is what a pass would do to the task itself, if anything.
	TaskVerdict *judge.TaskJudgement `json:"task_verdict,omitempty"`
	// Unprotected is set for a running task whose task lock is gone.
	Unprotected *Unprotected `json:"unprotected,omitempty"`
	Status      Status       `json:"status"`
	// Conclusion is one line for a human.
	Conclusion string `json:"conclusion"`
}

// Process is a core_appstatus row a task is claimed by, as judged.
type Process struct {
	AppLockID string `json:"app_lock_id"`
	// Name and AppType are empty when the row no longer exists.
	Name         string          `json:"name,omitempty"`
	AppType      string          `json:"app_type,omitempty"`
	Liveness     judge.Liveness  `json:"liveness"`
	HeartbeatAge *judge.Duration `json:"heartbeat_age,omitempty"`
}

// ResourceNeed is one reservation of the task and its holders in Redis.
type ResourceNeed struct {
	Resource string `json:"resource"`
	// Need is how the task reserves it: exclusive or shared.
	Need    judge.Kind `json:"need"`
	Holders []Holder   `json:"holders"`
}

// Holder is one holding that matters to the explained task, with the
// verdict a pass would give it.
type Holder struct {
	Key          string          `json:"key"`
	Kind         judge.Kind      `json:"kind"`
	Owner        string          `json:"owner"`
	Liveness     judge.Liveness  `json:"owner_liveness"`
	HeartbeatAge *judge.Duration `json:"heartbeat_age,omitempty"`
	// Kubernetes is the owner's pod evidence, when the pass read pods.
	Kubernetes *judge.PodEvidence `json:"kubernetes,omitempty"`
	// Task is the task the owner holds it for, through its task lock.
	Task *TaskRef `json:"task,omitempty"`
	// Own says it is held for the explained task itself.
	Own bool `json:"own"`
	// Blocks says it keeps the waiting task from acquiring its locks.
	Blocks   bool          `json:"blocks"`
	Verdict  judge.Verdict `json:"verdict"`
	Action   judge.Action  `json:"action"`
	Deferred string        `json:"deferred,omitempty"`
}

// TaskRef is a task mentioned by an explanation.
type TaskRef struct {
	ID   string `json:"id"`
	Name string `json:"name,omitempty"`
	// State is empty when the task has no row.
	State string `json:"state,omitempty"`
}

// TaskAhead is an older waiting task that goes first.
type TaskAhead struct {
	pulpdb.TaskRow
	// Conflicts lists the explained task's resources it needs in a
	// conflicting way.
	Conflicts []string `json:"conflicts"`
	Claim     *Process `json:"claim,omitempty"`
}

// Explain says why the task waits, runs or was lost, from an inspection
// alone: it is pure, and every age is measured on the inspection's database
// clock. A task the inspection has no row of is StatusNotFound.
func Explain(in *Inspection, taskID string) Explanation {
	ex := explainer{in: in, fleet: in.Fleet(), id: taskID}
	return ex.run()
}

type explainer struct {
	in    *Inspection
	fleet *judge.Fleet
	id    string
	e     Explanation
}

func (x *explainer) run() Explanation {
	snap := x.in.Snapshot
	x.e = Explanation{TaskID: x.id, DBNow: snap.Now, TaskLocks: []Holder{}, Resources: []ResourceNeed{}, Ahead: []TaskAhead{}}
	x.e.Task = x.taskRow()
	for _, tj := range x.in.Plan.Tasks {
		if tj.ID == x.id {
			x.e.TaskVerdict = &tj
		}
	}
	x.collectTaskLocks()
	if x.e.Task == nil {
		x.e.Status, x.e.Conclusion = StatusNotFound, x.notFound()
		return x.e
	}
	x.e.Claim = x.process(x.e.Task.AppLockID)
	x.collectResources()
	x.e.Unprotected = x.unprotected()
	x.collectAhead()
	x.e.Status, x.e.Conclusion = x.conclude()
	return x.e
}

// taskRow prefers the row read for explain, which has pulp_created, and falls
// back on the snapshot's.
func (x *explainer) taskRow() *pulpdb.TaskRow {
	if ex := x.in.Explained; ex != nil && ex.TaskID == x.id && ex.Row != nil {
		row := *ex.Row
		return &row
	}
	if t, ok := x.in.Snapshot.Tasks[x.id]; ok {
		return &pulpdb.TaskRow{Task: t}
	}
	return nil
}

func (x *explainer) process(appLockID string) *Process {
	if appLockID == "" {
		return nil
	}
	p := &Process{AppLockID: appLockID, Liveness: judge.Gone}
	row, live, ok := x.fleet.Row(appLockID)
	if ok {
		p.Name, p.AppType, p.Liveness = row.Name, row.AppType, live
		p.HeartbeatAge = durationPtr(x.in.Snapshot.Now.Sub(row.LastHeartbeat))
	}
	return p
}

func (x *explainer) taskRef(id string) *TaskRef {
	if id == "" {
		return nil
	}
	ref := &TaskRef{ID: id}
	if t, ok := x.in.Snapshot.Tasks[id]; ok {
		ref.Name, ref.State = t.Name, t.State
	} else if x.e.Task != nil && id == x.id {
		ref.Name, ref.State = x.e.Task.Name, x.e.Task.State
	}
	return ref
}

func (x *explainer) holder(jd judge.Judgement) Holder {
	e := jd.Evidence()
	h := Holder{
		Key: jd.Key, Kind: jd.Kind, Owner: jd.Owner, Liveness: e.OwnerLiveness, HeartbeatAge: e.HeartbeatAge,
		Kubernetes: e.Kubernetes, Task: x.taskRef(jd.HoldingTask()), Verdict: jd.Verdict, Action: jd.Action, Deferred: jd.Deferred,
	}
	h.Own = jd.HoldingTask() == x.id
	return h
}

// waiting says the task still has to acquire its locks: only then do other
// holdings and older tasks stand in its way.
func (x *explainer) waiting() bool {
	return x.e.Task != nil && x.e.Task.State == judge.StateWaiting && x.e.Task.AppLockID == ""
}

func (x *explainer) collectTaskLocks() {
	key := judge.TaskKeyPrefix + x.id
	for _, jd := range x.in.Plan.Holdings {
		if jd.Key == key {
			h := x.holder(jd)
			// Pulp's acquire fails while the task key exists, whoever holds it.
			h.Blocks = x.waiting()
			x.e.TaskLocks = append(x.e.TaskLocks, h)
		}
	}
}

func (x *explainer) collectResources() {
	byKey := map[string][]judge.Judgement{}
	for _, jd := range x.in.Plan.Holdings {
		if jd.Kind != judge.KindTask {
			byKey[jd.Key] = append(byKey[jd.Key], jd)
		}
	}
	for _, n := range judge.Reservations(x.e.Task.Reserved) {
		rn := ResourceNeed{Resource: n.Resource, Need: n.Kind, Holders: []Holder{}}
		for _, jd := range byKey[judge.ResourceKeyPrefix+n.Resource] {
			h := x.holder(jd)
			h.Blocks = x.waiting() && !h.Own && judge.Conflicts(n.Kind, jd.Kind)
			rn.Holders = append(rn.Holders, h)
		}
		x.e.Resources = append(x.e.Resources, rn)
	}
}

func (x *explainer) collectAhead() {
	ex := x.in.Explained
	if ex == nil || ex.TaskID != x.id || judge.Final(x.e.Task.State) {
		return
	}
	mine := judge.Reservations(x.e.Task.Reserved)
	finishing := map[string]bool{}
	for _, tj := range x.in.Plan.Tasks {
		if tj.Action == judge.ActionUpdate && judge.Final(tj.StateAfter) {
			finishing[tj.ID] = true
		}
	}
	for _, t := range ex.Ahead {
		// Only a waiting task goes first; one the next pass cancels does not.
		if t.State != judge.StateWaiting || finishing[t.ID] {
			continue
		}
		var hits []string
		theirs := map[judge.Reservation]bool{}
		for _, n := range judge.Reservations(t.Reserved) {
			theirs[n] = true
		}
		for _, n := range mine {
			for _, kind := range []judge.Kind{judge.KindExclusive, judge.KindShared} {
				if theirs[judge.Reservation{Resource: n.Resource, Kind: kind}] && judge.Conflicts(n.Kind, kind) {
					hits = append(hits, n.Resource)
					break
				}
			}
		}
		// The query already selected conflicting tasks; this check keeps
		// Explain right for any inspection it is given.
		if len(hits) > 0 {
			x.e.Ahead = append(x.e.Ahead, TaskAhead{TaskRow: t, Conflicts: hits, Claim: x.process(t.AppLockID)})
		}
	}
	x.e.AheadTotal = max(ex.AheadTotal-(len(ex.Ahead)-len(x.e.Ahead)), len(x.e.Ahead))
}

func (x *explainer) notFound() string {
	msg := "not found: no task " + x.id
	for _, h := range x.e.TaskLocks {
		msg += fmt.Sprintf("; yet %s holds its task lock (%s): %s", h.Owner, h.Verdict, fate(h.Action, h.Deferred, false))
	}
	return msg
}

// conclude decides the status and the one-line conclusion.
func (x *explainer) conclude() (Status, string) {
	t := x.e.Task
	if tj := x.e.TaskVerdict; tj != nil {
		if s, msg, ok := x.taskVerdictConclusion(*tj); ok {
			return s, msg
		}
	}
	claim := x.e.Claim
	switch {
	case judge.Final(t.State):
		return StatusFinished, x.finished()
	case x.e.Unprotected != nil:
		return StatusUnprotected, x.unprotectedConclusion()
	case t.State == judge.StateRunning || t.State == judge.StateCanceling:
		return StatusRunning, fmt.Sprintf("%s on %s", t.State, processPhrase(claim))
	case t.AppLockID != "":
		return StatusStarting, fmt.Sprintf("claimed by %s: about to run", processPhrase(claim))
	}
	return x.queued()
}

func (x *explainer) taskVerdictConclusion(tj judge.TaskJudgement) (Status, string, bool) {
	held := ""
	if tj.Deferred != "" {
		held = fmt.Sprintf(" (held back this pass: %s)", tj.Deferred)
	}
	worker := processPhrase(x.e.Claim)
	switch {
	case tj.Verdict == judge.VerdictLost && x.e.Claim == nil:
		return StatusLost, fmt.Sprintf("lost: %s with no claim, its worker's row is gone; the next pass %s it%s", tj.StateBefore, finishVerb(tj.StateAfter), held), true
	case tj.Verdict == judge.VerdictLost:
		return StatusLost, fmt.Sprintf("lost: claimed by %s; the next pass %s it%s", worker, finishVerb(tj.StateAfter), held), true
	case tj.Verdict == judge.VerdictOrphanedClaim:
		next := "requeues it"
		if !tj.ClearClaim {
			next = finishVerb(tj.StateAfter) + " it"
		}
		if len(x.e.TaskLocks) > 0 {
			next = "releases its lock and " + next
		}
		return StatusOrphaned, fmt.Sprintf("orphaned: claimed by %s; the next pass %s%s", worker, next, held), true
	case tj.Verdict == judge.VerdictStuckClaim:
		when := "the next pass requeues it"
		if tj.Action == judge.ActionSuspect {
			when = "requeued once confirmed"
			if first := tj.Details().FirstSeen; first != nil {
				when += " (suspect since " + first.UTC().Format(time.RFC3339) + ")"
			}
		}
		return StatusStuck, fmt.Sprintf("stuck: claimed by %s, which holds no lock for it; %s%s", worker, when, held), true
	}
	return "", "", false
}

func (x *explainer) finished() string {
	msg := "finished (" + x.e.Task.State + ")"
	var left []string
	for _, h := range x.e.TaskLocks {
		left = append(left, fmt.Sprintf("%s still holds its task lock (%s): %s", h.Owner, h.Verdict, fate(h.Action, h.Deferred, false)))
	}
	if len(left) > 0 {
		msg += "; " + strings.Join(left, "; ")
	}
	return msg
}

// queued explains a waiting, unclaimed task: Pulp's workers acquire its
// locks only once no one holds them in a conflicting way and no older task
// needs them.
func (x *explainer) queued() (Status, string) {
	var stale, live []Holder
	for _, h := range x.blockers() {
		if h.Action == judge.ActionKeep {
			live = append(live, h)
		} else {
			stale = append(stale, h)
		}
	}
	var clauses []string
	status := StatusReady
	if len(stale) > 0 {
		status = StatusBlocked
		clauses = append(clauses, staleClause(stale))
	}
	if len(live) > 0 {
		if status == StatusReady {
			status = StatusWaiting
		}
		clauses = append(clauses, x.liveClause(live))
	}
	if ahead := x.aheadClause(append(stale, live...)); ahead != "" {
		if status == StatusReady {
			status = StatusWaiting
		}
		clauses = append(clauses, ahead)
	}
	if len(clauses) == 0 {
		return StatusReady, "ready to run: nothing holds its resources and no older task needs them"
	}
	for i := 1; i < len(clauses); i++ {
		clauses[i] = "then " + clauses[i]
	}
	return status, strings.Join(clauses, "; ")
}

// blockers lists the holdings in the waiting task's way, task lock first,
// then in the order of its reservations.
func (x *explainer) blockers() []Holder {
	var out []Holder
	for _, h := range x.e.TaskLocks {
		if h.Blocks {
			out = append(out, h)
		}
	}
	for _, rn := range x.e.Resources {
		for _, h := range rn.Holders {
			if h.Blocks {
				out = append(out, h)
			}
		}
	}
	return out
}

// staleClause names the owners of stale and suspect holdings in the way;
// releases come before suspects, so the first one named is the surest.
func staleClause(hs []Holder) string {
	sort.SliceStable(hs, func(a, b int) bool { return hs[a].Action == judge.ActionRelease && hs[b].Action != judge.ActionRelease })
	first := hs[0]
	subject := "a stale lock of " + ownerPhrase(first)
	switch {
	case first.Own && first.Kind == judge.KindTask:
		// A worker took its locks and stopped before claiming it.
		subject = "its own task lock, taken by " + ownerPhrase(first) + " that never claimed it"
	case first.Verdict == judge.VerdictTaskFinished && first.Liveness != judge.Dead && first.Task != nil:
		// A live worker that lost track of a finished task's locks.
		subject = fmt.Sprintf("a lock %s kept for finished task %s", first.Owner, first.Task.ID)
	case first.Action == judge.ActionSuspect:
		subject = "a suspect lock of " + ownerPhrase(first)
	}
	if n := len(distinctOwners(hs)) - 1; n > 0 {
		subject += fmt.Sprintf(" and %d other owner%s", n, plural(n))
	}
	return fmt.Sprintf("blocked by %s (%s): %s", subject, evidencePhrase(first), fate(first.Action, first.Deferred, len(hs) > 1))
}

func (x *explainer) liveClause(hs []Holder) string {
	h := hs[0]
	var msg string
	if h.Task != nil && h.Task.State != "" {
		how := h.Task.State + " on " + ownerPhrase(h)
		if h.HeartbeatAge != nil {
			how += " (heartbeat " + h.HeartbeatAge.String() + " ago)"
		}
		if t, ok := x.in.Snapshot.Tasks[h.Task.ID]; ok && t.AppLockID != "" {
			how = h.Task.State + " on " + processPhrase(x.process(t.AppLockID))
			if t.State == judge.StateWaiting {
				how = "claimed by " + processPhrase(x.process(t.AppLockID))
			}
		}
		msg = fmt.Sprintf("waiting behind task %s (%s), %s", h.Task.ID, h.Task.Name, how)
	} else {
		msg = fmt.Sprintf("waiting for %s, held by %s (%s, kept)", h.Key, ownerPhrase(h), evidencePhrase(h))
	}
	if n := len(distinctOwners(hs)) - 1; n > 0 {
		msg += fmt.Sprintf(" and %d other live owner%s", n, plural(n))
	}
	return msg
}

// aheadClause names the oldest task that goes first and is not already named
// as the holder of a lock in the way; "" when there is none.
func (x *explainer) aheadClause(blockers []Holder) string {
	named := map[string]bool{}
	for _, h := range blockers {
		if h.Task != nil {
			named[h.Task.ID] = true
		}
	}
	var rest []TaskAhead
	for _, a := range x.e.Ahead {
		if !named[a.ID] {
			rest = append(rest, a)
		}
	}
	if len(rest) == 0 {
		return ""
	}
	a := rest[0]
	who := "unclaimed"
	if a.Claim != nil {
		who = "claimed by " + processPhrase(a.Claim)
	}
	msg := fmt.Sprintf("waiting behind older task %s (%s), %s, %s, which needs %s first", a.ID, a.Name, a.State, who, strings.Join(a.Conflicts, ", "))
	if n := x.e.AheadTotal - (len(x.e.Ahead) - len(rest)) - 1; n > 0 {
		msg += fmt.Sprintf(" (and %d more older task%s)", n, plural(n))
	}
	return msg
}

// fate says what the next pass does with a holding.
func fate(a judge.Action, deferred string, many bool) string {
	it := "it"
	if many {
		it = "them"
	}
	switch {
	case a == judge.ActionRelease && deferred != "":
		return fmt.Sprintf("a pass would release %s but %s holds it back", it, deferred)
	case a == judge.ActionRelease:
		return "the next pass releases " + it
	case a == judge.ActionSuspect:
		return "released once confirmed, confirm_after after its first sighting"
	default:
		return "kept"
	}
}

func finishVerb(stateAfter string) string {
	switch stateAfter {
	case judge.StateFailed:
		return "fails"
	case judge.StateWaiting:
		return "requeues"
	default:
		return "cancels"
	}
}

// livenessWord reads better in a sentence than the liveness name.
func livenessWord(l judge.Liveness) string {
	if l == judge.Alive {
		return "live"
	}
	return l.String()
}

// ownerPhrase names a holding's owner with its liveness: "dead worker 1@w".
func ownerPhrase(h Holder) string {
	if h.Liveness == judge.Gone {
		return "owner " + h.Owner + ", which has no AppStatus row"
	}
	return livenessWord(h.Liveness) + " worker " + h.Owner
}

// evidencePhrase is the verdict and heartbeat age behind a holding's fate.
func evidencePhrase(h Holder) string {
	s := string(h.Verdict)
	if h.HeartbeatAge != nil {
		s += ", heartbeat " + h.HeartbeatAge.String() + " ago"
	}
	return s
}

// processPhrase describes the process a task is claimed by: "live worker
// 1@w (heartbeat 2s ago)".
func processPhrase(p *Process) string {
	if p == nil {
		return "no process (unclaimed)"
	}
	if p.Name == "" {
		return "a process whose AppStatus row " + p.AppLockID + " is gone"
	}
	kind := p.AppType
	if kind == "" {
		kind = "process"
	}
	s := livenessWord(p.Liveness) + " " + kind + " " + p.Name
	if p.HeartbeatAge != nil {
		s += " (heartbeat " + p.HeartbeatAge.String() + " ago)"
	}
	return s
}

func distinctOwners(hs []Holder) []string {
	seen := map[string]bool{}
	var out []string
	for _, h := range hs {
		if !seen[h.Owner] {
			seen[h.Owner] = true
			out = append(out, h.Owner)
		}
	}
	sort.Strings(out)
	return out
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func durationPtr(d time.Duration) *judge.Duration { v := judge.Duration(d); return &v }
