package cli

import (
	"fmt"
	"io"
	"time"

	"github.com/lock-reaper/lock-reaper/reaper/judge"
)

// writeLocks prints `locks` as one complete JSON document or as a table in
// layout l: one row per holding, a task's id once (in the key of its task
// lock, in the TASK column of its resources).
func writeLocks(w io.Writer, format string, out LocksOutput, l layout) error {
	if isJSON(format) {
		return writeJSON(w, format, out)
	}
	// The most severe first, as audit lists its findings, on a terminal and
	// piped alike; JSON keeps the pass's order.
	list := out.Holdings
	order := severeOrder(len(list), func(i int) orderKey { return lockOrder(&list[i]) })
	t := &table{header: []string{"KEY", "KIND", "OWNER", "LIVENESS", "TASK", "VERDICT", "ACTION"}, drop: []int{1, 3}}
	n := shown(len(list), l.limit)
	t.each = func(emit func(...cell)) {
		for _, i := range order[:n] {
			h := &list[i]
			task := "-"
			switch {
			case h.Kind == judge.KindTask && h.TaskState != "":
				task = quoteText(h.TaskState)
			case h.Kind == judge.KindTask:
				task = "no task row"
			case h.TaskID != "":
				task = h.TaskID
				if h.TaskState != "" {
					task += " (" + quoteText(h.TaskState) + ")"
				}
			}
			emit(keyCell(quoteText(h.Key)), textCell(h.Kind.String()), keyCell(quoteText(h.Owner)),
				textCell(livenessText(h.OwnerLiveness, h.HeartbeatAge)+podText(h.Kubernetes)).in(livenessColor(h.OwnerLiveness)), keyCell(task),
				textCell(h.Verdict.String()).in(verdictColor(h.Verdict)), freeCell(h.Action.String()+deferredText(h.Deferred)))
		}
	}
	t.write(w, l)
	moreLine(w, "", len(out.Holdings)-n)
	_, err := fmt.Fprintf(w, "%d holdings at %s (database clock)\n", len(out.Holdings), out.DBNow.UTC().Format(time.RFC3339))
	return err
}

func writeLocksByOwner(w io.Writer, format string, out LocksByOwnerOutput, l layout) error {
	if isJSON(format) {
		return writeJSON(w, format, out)
	}
	// As the holdings: the owner with the most severe verdict first.
	owners := append([]OwnerCounts(nil), out.Owners...)
	ownersMostSevereFirst(owners)
	t := &table{header: []string{"OWNER", "LIVENESS", "HEARTBEAT AGE", "HOLDINGS", "TASK", "EXCLUSIVE", "SHARED", "VERDICTS"}, drop: []int{4, 5, 6}}
	n := shown(len(owners), l.limit)
	for _, c := range owners[:n] {
		t.add(keyCell(quoteText(c.Owner)), textCell(c.OwnerLiveness).in(livenessColor(c.OwnerLiveness)), textCell(ageOrDash(c.HeartbeatAge)),
			textCell(fmt.Sprint(c.Holdings)), textCell(fmt.Sprint(c.ByKind[judge.KindTask])), textCell(fmt.Sprint(c.ByKind[judge.KindExclusive])),
			textCell(fmt.Sprint(c.ByKind[judge.KindShared])), freeCell(countsText(c.ByVerdict)))
	}
	t.write(w, l)
	moreLine(w, "", len(out.Owners)-n)
	_, err := fmt.Fprintf(w, "%d owners at %s (database clock)\n", len(out.Owners), out.DBNow.UTC().Format(time.RFC3339))
	return err
}
