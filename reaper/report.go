package reaper

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lock-reaper/lock-reaper/heartbeat"
	"github.com/lock-reaper/lock-reaper/internal/humantext"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
)

// Report is what one pass found and did. It is the single source of truth:
// the logs, the text table, `--output json` and the metrics all read it.
type Report struct {
	Mode       string    `json:"mode"`
	StartedAt  time.Time `json:"started_at"`
	DurationMS int64     `json:"duration_ms"`
	// PhaseTimes says where the duration went, phase by phase.
	PhaseTimes []PhaseTime `json:"phase_times,omitempty"`
	// DBNow is the database clock every age was measured against.
	DBNow time.Time `json:"db_now"`
	// Skipped says why the pass did nothing (another reaper held the lock).
	Skipped string  `json:"skipped,omitempty"`
	Scanned Scanned `json:"scanned"`
	// RedisLoad is the pass's own traffic to Redis.
	RedisLoad RedisLoad `json:"redis_load"`
	// LockOwners is every owner of a lock holding, with its liveness.
	LockOwners []OwnerReport `json:"owners"`
	Findings   []Finding     `json:"findings"`
	Tasks      []TaskFinding `json:"tasks"`
	Ignored    []Ignored     `json:"ignored"`
	Guards     []Guard       `json:"guards"`
	// Kubernetes is what the pass read from Kubernetes, when that is on.
	Kubernetes *KubernetesReport `json:"kubernetes,omitempty"`
	// HeartbeatRecheck is what reads of the heartbeats a period apart said
	// of the rows that looked dead, when some did.
	HeartbeatRecheck *HeartbeatRecheck `json:"heartbeat_recheck,omitempty"`
	Summary          Summary           `json:"summary"`
	// SignalCheck is what the pass did about earlier cancel signals when
	// Redis's primary was not the one they were last checked on.
	SignalCheck *SignalCheck `json:"cancel_signal_check,omitempty"`
	// Notes say what the pass saw about the deployment itself, such as
	// Pulp running a worker whose locks are not in Redis (WorkerTypeNote).
	Notes []string `json:"notes,omitempty"`
	// Error says why the pass could not complete; what it did before is above.
	Error string `json:"error,omitempty"`

	// NextChange is the earliest moment (database clock) at which a verdict
	// of this pass can change with nothing else changing (judge.NextChange);
	// zero when none is pending or the pass judged nothing. The daemon runs
	// its next pass then.
	NextChange time.Time `json:"-"`
	// ReleaseDelays is, per dead owner whose locks this pass released, how
	// long after the rules allowed it (releaseDelays).
	ReleaseDelays []time.Duration `json:"-"`

	verdictCounts map[judge.Verdict]int
	// redisPrimary says the pass found Redis the primary, so the history
	// may be written without asking again.
	redisPrimary bool
	// historyFailed says the pass is not in the history (HistoryWriteFailed).
	historyFailed bool
	// bookkeepingFailed names the records of its own the pass could not
	// write, Redis being full (BookkeepingWriteFailures).
	bookkeepingFailed []string
	// clock notes the phases' ends while the pass runs (PhaseTimes).
	clock *phaseClock
}

// Scanned counts what the pass read.
type Scanned struct {
	Keys             int  `json:"keys"`
	TaskLocks        int  `json:"task_locks"`
	ResourceHoldings int  `json:"resource_holdings"`
	Owners           int  `json:"owners"`
	Tasks            int  `json:"tasks"`
	Ignored          int  `json:"ignored"`
	FullScan         bool `json:"full_scan"`
}

// Finding is one holding that is not healthy, and what became of it: the
// judge's judgement (the plan's own, not a copy: an incident's findings are
// hundreds of thousands) and the pass's result. In JSON its holding's
// fields are flat, with task_id and resource (report_json.go).
type Finding struct {
	*judge.Judgement
	Result Result
}

// TaskFinding is one lost, orphaned or stuck task, and what became of it:
// the judge's task judgement and the pass's result. In JSON a cleared claim
// is "requeue".
type TaskFinding struct {
	*judge.TaskJudgement
	Result Result
	// Resources lists, for an unprotected task, what it reserves and who
	// else holds each (unguardedOf).
	Resources []UnguardedResource
}

// Summary counts holdings and tasks by verdict and by result.
type Summary struct {
	// HoldingsByVerdict counts every holding, healthy ones included.
	HoldingsByVerdict map[judge.Verdict]int `json:"by_verdict"`
	// FindingsByResult counts the findings (holdings not healthy).
	FindingsByResult map[Result]int        `json:"by_result"`
	TasksByVerdict   map[judge.Verdict]int `json:"tasks_by_verdict"`
	TasksByResult    map[Result]int        `json:"tasks_by_result"`
	Released         int                   `json:"released"`
	TasksUpdated     int                   `json:"tasks_updated"`
	Suspects         int                   `json:"suspects"`
	Deferred         int                   `json:"deferred"`
}

// WouldAct says a real pass would release a lock or update a task: the
// findings of an audit that need action (those that need confirmation count).
func (r *Report) WouldAct() bool {
	for _, f := range r.Findings {
		if f.Action == judge.ActionRelease || f.Action == judge.ActionSuspect {
			return true
		}
	}
	for _, t := range r.Tasks {
		if t.Action == judge.ActionUpdate || t.Action == judge.ActionSuspect {
			return true
		}
	}
	return false
}

func (r *Report) summarize() {
	s := Summary{HoldingsByVerdict: map[judge.Verdict]int{}, FindingsByResult: map[Result]int{}, TasksByVerdict: map[judge.Verdict]int{}, TasksByResult: map[Result]int{}}
	for _, f := range r.Findings {
		s.FindingsByResult[f.Result]++
		switch f.Result {
		case ResultReleased:
			s.Released++
		case ResultDeferred:
			s.Deferred++
		case ResultSuspected:
			s.Suspects++
		}
	}
	for _, t := range r.Tasks {
		s.TasksByVerdict[t.Verdict]++
		s.TasksByResult[t.Result]++
		switch t.Result {
		case ResultUpdated:
			s.TasksUpdated++
		case ResultDeferred:
			s.Deferred++
		case ResultSuspected:
			s.Suspects++
		}
	}
	r.Summary = s
}

// noteRead copies what the pass read into the report: all of it when the
// read completed, the Kubernetes read alone when it failed after the list.
// rd comes by value, as the pass keeps it: a pointer would keep the
// snapshot's tasks through the actor's work (runPass).
func (r *Report) noteRead(rd readResult) {
	r.Kubernetes = rd.kubernetes
	r.DBNow = rd.snap.Now
	r.Scanned = rd.scanned
	r.Ignored = rd.ignored
	r.Guards = append(r.Guards, rd.guards...)
	r.Notes = append(r.Notes, rd.notes...)
}

// fill copies the plan and what the actor did into the report, and lets go
// of the plan's lists as it goes: when every holding is stale they are
// hundreds of thousands of judgements, and the report's copy of them would
// otherwise double the peak of the pass. Nothing reads the plan after this.
func (r *Report) fill(plan *judge.Plan, act *actor) {
	r.verdictCounts = plan.ByVerdict
	r.Notes = append(r.Notes, act.notes...)
	r.bookkeepingFailed = act.bookkeepingFailed
	r.Tasks = make([]TaskFinding, len(plan.Tasks))
	for i := range plan.Tasks {
		plan.Tasks[i].Deferred = act.taskDeferred[i]
		r.Tasks[i] = TaskFinding{TaskJudgement: &plan.Tasks[i], Result: act.taskResults[i]}
	}
	plan.Tasks, act.taskResults, act.taskDeferred = nil, nil, nil
	// The findings point into the plan's judgements, kept where they are.
	n := 0
	for i := range plan.Holdings {
		if plan.Holdings[i].Verdict.Finding() {
			n++
		}
	}
	r.Findings = make([]Finding, 0, n)
	for i := range plan.Holdings {
		if plan.Holdings[i].Verdict.Finding() {
			r.Findings = append(r.Findings, Finding{Judgement: &plan.Holdings[i], Result: act.holdingResults[i]})
		}
	}
	plan.Holdings, act.holdingResults = nil, nil
	r.LockOwners = OwnerReportsOf(plan.LockOwners)
	r.Scanned.Owners = len(plan.LockOwners)
}

// summarizeAll counts by verdict and result; empty lists print as [] in JSON.
func (r *Report) summarizeAll() {
	r.summarize()
	r.Summary.HoldingsByVerdict = r.verdictCounts
	if r.Summary.HoldingsByVerdict == nil {
		r.Summary.HoldingsByVerdict = map[judge.Verdict]int{}
	}
	if r.Findings == nil {
		r.Findings = []Finding{}
	}
	if r.Tasks == nil {
		r.Tasks = []TaskFinding{}
	}
	if r.Ignored == nil {
		r.Ignored = []Ignored{}
	}
	if r.Guards == nil {
		r.Guards = []Guard{}
	}
	if r.LockOwners == nil {
		r.LockOwners = []OwnerReport{}
	}
}

// timeDuration is a report duration as a time.Duration, for the logs.
func timeDuration(d *judge.Duration) time.Duration { return time.Duration(*d) }

// Result of acting on a holding or a task.
type Result string

const (
	ResultReleased     Result = "released"
	ResultAlreadyGone  Result = "already-gone"
	ResultOwnerChanged Result = "owner-changed"
	ResultWouldRelease Result = "would-release"
	ResultSuspected    Result = "suspected"
	ResultKept         Result = "kept"
	// ResultDeferred is work a guard or a per-pass limit held back.
	ResultDeferred Result = "deferred"
	// ResultFailed is work the pass could not finish (a Redis or database error).
	ResultFailed Result = "failed"

	ResultUpdated     Result = "updated"
	ResultWouldUpdate Result = "would-update"
	// ResultSkipped is a conditional write that lost a race: nothing changed.
	ResultSkipped Result = "skipped"
	// ResultReported is a task only reported (verdict unprotected).
	ResultReported Result = "reported"
)

// GuardReason words what a guard of the plan counted, for the report, the
// log and a refused release.
func GuardReason(g judge.Guard) string {
	switch g.Name {
	case judge.GuardMassDeath:
		return massDeathReason(g.Count, g.MaxDeadFraction)
	case judge.GuardMaxReleases:
		return fmt.Sprintf("%d holdings to release, at most %d per pass (max_releases): the rest waits for the next pass", g.Wanted, g.Limit)
	case judge.GuardMaxTaskUpdates:
		return fmt.Sprintf("%d tasks to update, at most %d per pass (max_task_updates): the rest waits for the next pass", g.Wanted, g.Limit)
	case judge.GuardHeartbeatStall:
		return fmt.Sprintf("%d process rows look dead, but of the largest group of rows whose heartbeats stopped within a heartbeat period of each other (%d rows), %d wrote again since: a stall is ending (a lock on core_appstatus, a paused PgBouncer, an overloaded database), and these may be the next to write; their holdings and tasks wait for a pass that finds them still silent a period later while none of their group comes back",
			g.Motion.Held, g.Motion.Group, g.Motion.Back)
	case judge.GuardHeartbeatRecheck:
		return fmt.Sprintf("%d process rows look dead, but no second read of the heartbeats a period later settled it: their holdings and tasks wait for the next pass", g.Motion.Held)
	case judge.GuardAliveOwner:
		return fmt.Sprintf("%s has an online AppStatus row (heartbeat %s ago): its locks are most likely healthy; nothing is released and no task is updated; rerun with --force if it is really dead",
			g.Owner.Name, humantext.Short(g.Owner.HeartbeatAge))
	}
	return g.Name
}

// massDeathReason says what the mass-death guard counted, with the deaths'
// real ages, and what ends the hold.
func massDeathReason(c judge.MassDeathCount, maxDeadFraction float64) string {
	ages := "dead for " + humantext.Short(c.Newest)
	if c.Oldest != c.Newest {
		ages = fmt.Sprintf("dead for %s to %s", humantext.Short(c.Newest), humantext.Short(c.Oldest))
	}
	var why string
	switch {
	case c.NoneLive:
		why = "no worker row is alive"
	case c.Remembered == c.Dead:
		why = "each was seen alive by an earlier pass"
	case c.Remembered > 0:
		why = fmt.Sprintf("%d of them seen alive by an earlier pass, the others died within the last %s", c.Remembered, judge.MassDeathWindow)
	default:
		why = fmt.Sprintf("each died within the last %s", judge.MassDeathWindow)
	}
	return fmt.Sprintf("%d of %d worker rows are dead, %s (%s), more than max_dead_fraction %s: a database too slow to record heartbeats looks like a dead fleet; nothing is released on dead grounds and no task is updated until pulpcore deletes those rows, the pods prove the deaths, or a pass runs with --force; rerun with --force if the workers really died",
		c.Dead, c.Workers, ages, why, strconv.FormatFloat(maxDeadFraction, 'f', -1, 64))
}

// HoldingTask names the task a holding is held for: the task of a task lock,
// or for a resource holding the task of the owner's task lock that reserves
// the resource (the one that justified it or whose verdict it inherited:
// via, its evidence's Via). It is "" when no task lock of the owner
// reserves it.
func HoldingTask(h *judge.Holding, via string) string {
	if h.Kind == judge.KindTask {
		return h.TaskID()
	}
	if id, ok := strings.CutPrefix(via, judge.TaskKeyPrefix); ok && judge.IsTaskUUID(id) {
		return id
	}
	return ""
}

// ClockBehindMargin is how far a moving heartbeat may be behind the
// database's clock before it is reported: a write takes a moment to land.
const ClockBehindMargin = 5 * time.Second

// HeartbeatRecheck is what the pass's reads of the heartbeats a period
// apart said of the rows it found dead (heartbeat.Settle), by count.
type HeartbeatRecheck struct {
	// Rows is how many rows looked dead and were read again.
	Rows int `json:"rows"`
	// Moving rows wrote between the reads: alive whatever their age.
	Moving int `json:"moving"`
	// Stalled rows did not, while others that stopped with them did: held.
	Stalled int `json:"stalled"`
	// Settled rows did not, nor did any that stopped with them: dead.
	Settled int `json:"settled"`
	// Unsettled rows had no second read a period later: held.
	Unsettled int `json:"unsettled"`
	// Behind lists the moving rows whose clocks are behind the database's
	// by more than ClockBehindMargin.
	Behind []ClockBehind `json:"clock_behind,omitempty"`
}

// ClockBehind is a row whose heartbeat moves while its age says dead.
type ClockBehind struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// AtLeast is how far behind the database's clock its clock is, at least.
	AtLeast Seconds `json:"at_least_seconds"`
}

// noteMotion puts what the second reads said in the report: the counts, and
// a note per clock found behind.
func (rep *Report) noteMotion(m *heartbeat.Motion, rows []heartbeat.AppStatus) {
	if m.Len() == 0 {
		return
	}
	names := map[string]string{}
	for _, r := range rows {
		names[r.ID] = r.Name
	}
	rc := &HeartbeatRecheck{Rows: m.Len()}
	for _, id := range m.Rows() {
		rm, _ := m.Of(id)
		switch rm.Settlement {
		case heartbeat.Moving:
			rc.Moving++
			if rm.Behind > ClockBehindMargin {
				rc.Behind = append(rc.Behind, ClockBehind{ID: id, Name: names[id], AtLeast: Seconds(rm.Behind.Truncate(time.Second))})
			}
		case heartbeat.Stalled:
			rc.Stalled++
		case heartbeat.Settled:
			rc.Settled++
		default:
			rc.Unsettled++
		}
	}
	rep.HeartbeatRecheck = rc
	if note := behindNote(rc.Behind); note != "" {
		rep.Notes = append(rep.Notes, note)
	}
}

// behindNote says which workers write heartbeats that look dead when they
// land, "" for none.
func behindNote(behind []ClockBehind) string {
	if len(behind) == 0 {
		return ""
	}
	worst := slices.MaxFunc(behind, func(a, b ClockBehind) int { return int(a.AtLeast - b.AtLeast) })
	var who []string
	for _, b := range behind {
		who = append(who, b.Name)
	}
	return fmt.Sprintf("%d process rows write heartbeats that are old when they land (%s): %s's clock is at least %s behind the database's, or its writes are delayed. They are judged alive because their heartbeats move; pulpcore's own cleanup counts them missing. To fix: synchronise the clocks of Pulp's hosts (NTP); lock-reaper doctor checks the clocks",
		len(behind), strings.Join(who, ", "), worst.Name, humantext.Short(time.Duration(worst.AtLeast)))
}

// releaseDelays measures, for each owner judged dead whose holdings this pass
// released, how long after the moment the rules allowed it the release came:
// from its death by heartbeat (the newest row's last heartbeat + ttl +
// grace), or from its container's end or restart the kubelet reported
// (node clock) when the pods proved it sooner; to the snapshot's now. An
// owner the pods proved dead without a time (pod-terminal) is not measured.
// It is a measurement for the metrics, never a verdict.
func releaseDelays(rows []heartbeat.AppStatus, now time.Time, plan *judge.Plan, rep *Report, grace time.Duration) []time.Duration {
	released := map[string]bool{}
	for _, f := range rep.Findings {
		if f.Result == ResultReleased && f.Verdict == judge.VerdictOwnerDead {
			released[f.Owner] = true
		}
	}
	if len(released) == 0 {
		return nil
	}
	deathAt := map[string]time.Time{}
	for _, r := range rows {
		if at := r.DeathAt(grace); released[r.Name] && at.After(deathAt[r.Name]) {
			deathAt[r.Name] = at
		}
	}
	var out []time.Duration
	for _, o := range plan.FleetOwners {
		at, ok := deathAt[o.Name]
		if !ok {
			continue
		}
		if e := o.Kubernetes; e != nil {
			switch e.Rule {
			case heartbeat.PodTerminal:
				continue
			case heartbeat.PodContainerEnded, heartbeat.PodRestarted:
				if end, _, ok := containerFor(e).EndedBefore(); ok && end.Before(at) {
					at = end
				}
			}
		}
		out = append(out, max(now.Sub(at), 0))
	}
	return out
}

// containerFor is the container of the evidence's pod whose end the rules
// weighed: the worker's, or the API's for a pod with only that one.
func containerFor(e *heartbeat.PodEvidence) *heartbeat.Container {
	if e.Container != nil {
		return e.Container
	}
	return e.API
}

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
