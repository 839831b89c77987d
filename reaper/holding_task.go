package reaper

import (
	"strings"

	"github.com/lock-reaper/lock-reaper/reaper/judge"
)

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
