package status

import (
	"context"
	"log/slog"
)

// addRunningSince reads, once per published view, when the running tasks
// that live workers keep blocking holdings for started, and says so in
// their links: "never while its owner lives: held by live worker W for task
// T, running, since …". A role without the optional grant on
// core_task.started_at leaves the links as they are.
func (s *Server) addRunningSince(ctx context.Context, v *View) {
	var ids []string
	listed := map[string]bool{}
	for _, q := range v.Queue {
		for _, l := range q.Chain {
			if id := l.keptForTask(); id != "" && !listed[id] {
				listed[id] = true
				ids = append(ids, id)
			}
		}
	}
	if len(ids) == 0 {
		return
	}
	starts, granted, err := s.src.TaskStarts(ctx, ids)
	switch {
	case err != nil:
		s.opts.Logger.Warn("status page: task start times not read", slog.String("error", err.Error()))
		return
	case !granted:
		s.opts.Logger.Debug("status page: the role may not read core_task.started_at (an optional grant): no start times")
		return
	}
	for qi := range v.Queue {
		chain := v.Queue[qi].Chain
		for li := range chain {
			if at, ok := starts[chain[li].keptForTask()]; ok {
				chain[li].Since = at
				chain[li].Freed += " since " + clock(at)
			}
		}
	}
}
