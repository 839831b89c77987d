package judge

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/lock-reaper/lock-reaper/heartbeat"
)

// A stranded task: pulpcore's worker claims a waiting task (app_lock = its
// row), finds its own versions older than the task's (is_compatible),
// releases the task's Redis locks and leaves app_lock set; no other worker
// fetches a claimed task. Requeueing it helps only when some online worker
// can run it: otherwise the next too-old worker strands it again.

// Compatible says a worker with versions have may run a task that needs
// needs, as pulpcore's is_compatible decides: every label the task names
// must be among the worker's, at a PEP 440 version at or above the task's.
// A version that does not parse makes the worker incompatible
// (VersionAtLeast).
func Compatible(have, needs map[string]string) bool {
	for label, least := range needs {
		v, ok := have[label]
		if !ok || !VersionAtLeast(v, least) {
			return false
		}
	}
	return true
}

// VersionNeed is one version a stranded task needs and what its claiming
// worker has of it ("" when the worker lacks the label).
type VersionNeed struct {
	Label string
	Least string
	Has   string
}

// Stranded is what a stranded task's verdict rested on.
type Stranded struct {
	// Needs are the versions the claiming worker falls short of, by label.
	Needs []VersionNeed
	// Met are the other versions the task needs, which the claiming worker
	// has: a worker that can run the task needs them too.
	Met []VersionNeed
	// Online counts the alive worker rows, Compatible those of them that
	// have every version the task needs.
	Online, Compatible int
}

// String words the evidence, as explain, the status page and the report
// show it.
func (s Stranded) String() string {
	needs := make([]string, len(s.Needs))
	for i, n := range s.Needs {
		needs[i] = n.Label + " ≥ " + n.Least
	}
	want := strings.Join(needs, ", ")
	if s.Compatible == 0 {
		// No online worker has every version the task needs: name them
		// all, the ones its worker lacks first.
		all, it := want, "it"
		for _, n := range s.Met {
			all += ", " + n.Label + " ≥ " + n.Least
		}
		if len(s.Needs)+len(s.Met) > 1 {
			it = "them all"
		}
		return fmt.Sprintf("waits for a worker with %s; none of %d online workers has %s", all, s.Online, it)
	}
	have := make([]string, len(s.Needs))
	for i, n := range s.Needs {
		have[i] = n.Label + " " + n.Has
		if n.Has == "" {
			have[i] = "no " + n.Label
		}
	}
	return fmt.Sprintf("needs %s; its worker has %s; %d of %d online workers have it", want, strings.Join(have, ", "), s.Compatible, s.Online)
}

// strandedOf gathers the evidence on task t, claimed by row.
func (j *judge) strandedOf(t Task, row heartbeat.AppStatus) Stranded {
	var s Stranded
	for _, label := range slices.Sorted(maps.Keys(t.Versions)) {
		least := t.Versions[label]
		need := VersionNeed{Label: label, Least: least, Has: row.Versions[label]}
		if has, ok := row.Versions[label]; !ok || !VersionAtLeast(has, least) {
			s.Needs = append(s.Needs, need)
		} else {
			s.Met = append(s.Met, need)
		}
	}
	for _, r := range j.snap.AppStatuses {
		if r.AppType != "worker" {
			continue
		}
		if _, live, _ := j.fleet.Row(r.ID); live != heartbeat.Alive {
			continue
		}
		s.Online++
		if Compatible(r.Versions, t.Versions) {
			s.Compatible++
		}
	}
	return s
}

// strandedJudgement is what the stranded verdict does to task t: a requeue
// once confirmed, while a compatible worker is online; a report otherwise.
// A requeue restarts the confirmation, so a task stranded again by the
// next too-old worker is requeued at most once per confirm_after.
func (j *judge) strandedJudgement(tj *TaskJudgement, t Task) {
	row, _, _ := j.fleet.Row(t.AppLockID)
	s := j.strandedOf(t, row)
	tj.Stranded = &s
	tj.StateAfter, tj.ClearClaim = StateWaiting, true
	key := StuckClaimKey(tj.ID, t.AppLockID)
	seen := remember(j.suspects, &j.snap, key, VerdictStranded)
	tj.FirstSeen = &seen.FirstSeen
	switch {
	case s.Compatible == 0:
		// Nothing is written: requeued, it would only be stranded again.
		// The sighting is kept, so a compatible worker coming online
		// finds it confirmed.
		tj.Action, tj.StateAfter, tj.ClearClaim = ActionReport, t.State, false
	case !confirmed(seen.FirstSeen, j.snap.Now, j.p):
		tj.Action = ActionSuspect
	default:
		j.suspects[key] = Suspect{Verdict: VerdictStranded, FirstSeen: j.snap.Now}
	}
}
