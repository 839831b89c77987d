package cli

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/lock-reaper/lock-reaper/internal/config"
	"github.com/lock-reaper/lock-reaper/internal/exitcode"
	"github.com/lock-reaper/lock-reaper/reaper"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
)

func locksCommand() command {
	return command{
		name: "locks", summary: "list every lock holding with its owner's liveness, task and verdict (read-only)",
		keys: readKeys,
		exits: []exitCode{{0, "listed"}, {1, unreadable},
			{2, usageOrConfig + "; or --owner names an owner that holds nothing and has no AppStatus row"}},
		flags: locksFlags,
	}
}

// LocksOutput is what `lock-reaper locks --output json` prints: every
// holding of one snapshot that passes the filters, judged as a pass would,
// in the order a pass handles them (task locks first, then by key and owner).
type LocksOutput struct {
	// DBNow is the database clock every age was measured against.
	DBNow    time.Time  `json:"db_now"`
	Holdings []LockLine `json:"holdings"`
}

// LocksByOwnerOutput is what `lock-reaper locks --by-owner --output json`
// prints: the filtered holdings counted per owner, sorted by owner.
type LocksByOwnerOutput struct {
	DBNow  time.Time     `json:"db_now"`
	Owners []OwnerCounts `json:"owners"`
}

// LockLine is one holding: a task key or exclusive key and its owner, or one
// member of a shared set.
type LockLine struct {
	reaper.HoldingRef
	// OwnerLiveness is alive, late, dead or gone: text here, as in
	// OwnerCounts, where explain's Holder keeps a heartbeat.Liveness. Both
	// print the same word.
	OwnerLiveness string `json:"owner_liveness"`
	reaper.OwnerView
	Resource string `json:"resource,omitempty"`
	// TaskID is the task the holding is held for: the task of a task lock,
	// or of the owner's task lock that reserves the resource. task_id names
	// a task's id in every shape, as findings do.
	TaskID string `json:"task_id,omitempty"`
	// Task is TaskID under the name locks printed before 0.2.0; kept beside
	// it for one release (CHANGELOG.md), then removed.
	Task      string `json:"task,omitempty"`
	TaskState string `json:"task_state,omitempty"`
	reaper.HoldingVerdict
	Registered bool `json:"registered"`
}

// OwnerCounts sums up one owner's holdings.
type OwnerCounts struct {
	Owner         string                `json:"owner"`
	OwnerLiveness string                `json:"owner_liveness"`
	HeartbeatAge  *reaper.Seconds       `json:"heartbeat_age,omitempty"`
	Holdings      int                   `json:"holdings"`
	ByKind        map[judge.Kind]int    `json:"by_kind"`
	ByVerdict     map[judge.Verdict]int `json:"by_verdict"`
}

// lockFilter keeps the holdings an operator asked about; empty fields match
// everything.
type lockFilter struct {
	owner, resource, task string
	verdict               judge.Verdict
}

func (f lockFilter) match(l LockLine) bool {
	return (f.owner == "" || l.Owner == f.owner) &&
		(f.resource == "" || l.Resource == f.resource) &&
		(f.task == "" || l.TaskID == f.task) &&
		(f.verdict == 0 || l.Verdict == f.verdict)
}

// locksFlags defines the filters of `locks` and returns the listing.
func locksFlags(cmd *cobra.Command, loader *config.Loader) runFunc {
	fs := cmd.Flags()
	var f lockFilter
	var verdict string
	fs.StringVar(&f.owner, "owner", "", "only holdings of this owner")
	fs.StringVar(&f.resource, "resource", "", "only holdings of this resource (the name without pulp:resource_lock:)")
	fs.StringVar(&verdict, "verdict", "", "only holdings with this verdict ("+verdictNames()+")")
	fs.StringVar(&f.task, "task", "", "only holdings held for this task: its task lock and the resources it reserves")
	byOwner := fs.Bool("by-owner", false, "print counts per owner instead of one line per holding")
	registryOnly := fs.Bool("registry-only", false, "read only the owner registry, skip the keyspace SCAN (legacy locks are not seen)")
	limit := limitFlag(fs)
	_ = cmd.RegisterFlagCompletionFunc("verdict", choices(verdictCompletions()))
	return func(ctx context.Context, env Env, _ []string) int {
		return runLocks(ctx, env, cmd, loader, f, verdict, *byOwner, *registryOnly, limit)
	}
}

// runLocks lists the holdings of one snapshot. It reads as a pass does and
// writes nothing, not even suspects. Exit 0, 1 when the read failed, 2 on
// usage errors.
func runLocks(ctx context.Context, env Env, cmd *cobra.Command, loader *config.Loader, f lockFilter, verdict string,
	byOwner, registryOnly bool, limit *limitValue) int {
	fs := cmd.Flags()
	f.task = strings.ToLower(f.task)
	if verdict != "" && (f.verdict.UnmarshalText([]byte(verdict)) != nil || !knownVerdict(f.verdict)) {
		fmt.Fprintf(env.Stderr, "lock-reaper locks: --verdict must be one of %s, got %q\n", verdictNames(), verdict)
		return exitcode.Usage
	}
	progress := progressStderr(&env)
	r, s, code, ok := newReaper(fs, loader, env, false)
	if !ok {
		return code
	}
	defer s.close()
	progress.enable(s.cfg.Log.Format)
	in, err := r.Inspect(ctx, reaper.InspectOptions{RegistryOnly: registryOnly, Progress: progress.keys})
	progress.done()
	if err != nil {
		f := s.failed(err)
		fmt.Fprintf(env.Stderr, "lock-reaper locks: %s\n", f.message)
		return failureCode(f)
	}
	if f.owner != "" && !knownOwner(in.Snapshot, f.owner) {
		reportUnknownOwner(env.Stderr, "locks", in.Snapshot, f.owner)
		return exitUnknownOwner
	}
	lines := filterLockLines(lockLines(in.Plan), f)
	l := layoutFor(env.Stdout, envLookup(env), limit)
	if byOwner {
		err = writeLocksByOwner(env.Stdout, s.cfg.Output, LocksByOwnerOutput{DBNow: in.Snapshot.Now, Owners: countByOwner(lines)}, l)
	} else {
		err = writeLocks(env.Stdout, s.cfg.Output, LocksOutput{DBNow: in.Snapshot.Now, Holdings: lines}, l)
	}
	if err != nil {
		return exitcode.Failed
	}
	return exitcode.OK
}

// lockLines turns a plan's judgements into lines, in the plan's order.
func lockLines(plan judge.Plan) []LockLine {
	lines := make([]LockLine, 0, len(plan.Holdings))
	// An owner's holdings share its pod evidence; their lines share one copy.
	pods := reaper.PodViews{}
	for _, jd := range plan.Holdings {
		v := reaper.HoldingViewOf(&jd, pods)
		lines = append(lines, LockLine{
			HoldingRef: v.HoldingRef, OwnerLiveness: v.Liveness.String(), OwnerView: v.OwnerView, Resource: jd.Resource(),
			TaskID: v.Task, Task: v.Task, TaskState: jd.Evidence().TaskState, HoldingVerdict: v.HoldingVerdict, Registered: jd.Registered,
		})
	}
	return lines
}

func filterLockLines(lines []LockLine, f lockFilter) []LockLine {
	out := []LockLine{}
	for _, l := range lines {
		if f.match(l) {
			out = append(out, l)
		}
	}
	return out
}

func countByOwner(lines []LockLine) []OwnerCounts {
	byName := map[string]*OwnerCounts{}
	for _, l := range lines {
		c := byName[l.Owner]
		if c == nil {
			c = &OwnerCounts{Owner: l.Owner, OwnerLiveness: l.OwnerLiveness, HeartbeatAge: l.HeartbeatAge,
				ByKind: map[judge.Kind]int{}, ByVerdict: map[judge.Verdict]int{}}
			byName[l.Owner] = c
		}
		c.Holdings++
		c.ByKind[l.Kind]++
		c.ByVerdict[l.Verdict]++
	}
	out := make([]OwnerCounts, 0, len(byName))
	for _, c := range byName {
		out = append(out, *c)
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Owner < out[b].Owner })
	return out
}

func ageOrDash(d *reaper.Seconds) string {
	if d == nil {
		return "-"
	}
	return d.String()
}

func knownVerdict(v judge.Verdict) bool {
	for _, k := range judge.HoldingVerdicts {
		if k == v {
			return true
		}
	}
	return false
}

func verdictNames() string {
	return strings.Join(verdictCompletions(), ", ")
}

// verdictCompletions are the values --verdict takes.
func verdictCompletions() []string {
	names := make([]string, len(judge.HoldingVerdicts))
	for i, v := range judge.HoldingVerdicts {
		names[i] = v.String()
	}
	return names
}
