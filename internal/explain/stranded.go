package explain

import (
	"fmt"
	"time"

	"github.com/lock-reaper/lock-reaper/reaper"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
)

// strandedConclusion explains a waiting task claimed by a live worker too
// old for it: the versions it needs, whether an online worker has them,
// and what the reaper does about it.
func strandedConclusion(x *explainer, tj reaper.TaskVerdict, worker, held string) string {
	why := "it needs plugin versions its worker lacks"
	if tj.Stranded != nil {
		why = tj.Stranded.Why
	}
	var next string
	switch tj.Action {
	case judge.ActionReport:
		next = "never requeued while no online worker can run it"
	case judge.ActionSuspect:
		x.awaitsPass = true
		next = "requeued once confirmed"
		if first := tj.FirstSeen; first != nil {
			next += " (suspect since " + first.UTC().Format(time.RFC3339) + ")"
		}
	default:
		next = x.nextPass() + " requeues it"
	}
	return fmt.Sprintf("stranded: claimed by %s, too old for it; %s; %s%s", worker, why, next, held)
}
