package cli

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/lock-reaper/lock-reaper/internal/exitcode"
	"github.com/lock-reaper/lock-reaper/internal/sim"
)

// play tells the incident: the fleet, a queued task blocked by the dead
// worker, the audit, what blocks the queue as the status page reads it,
// the pass, and the same queued task free to run.
func (d *demo) play(ctx context.Context, limit int) int {
	inc := d.inc
	deadTasks := sim.Count(inc.Stale, inc.DeadOwner, sim.KindTask)
	deadResources := len(inc.Stale) - deadTasks
	liveTasks := 0
	for _, h := range inc.Healthy {
		if h.Kind == sim.KindTask {
			liveTasks++
		}
	}
	liveResources := len(inc.Healthy) - liveTasks
	fmt.Fprintf(d.out, "lock-reaper demo: the incident of 2026-07-24\n\n")
	fmt.Fprintf(d.out, "Built in PostgreSQL database %s and Redis %s:\n", d.dbName, d.redisURL)
	fmt.Fprintf(d.out, "  - worker %s, dead for 23 hours, still holds %d task locks\n", inc.DeadOwner, deadTasks)
	fmt.Fprintf(d.out, "    and %d resource locks (%d keys are legacy locks with no owner-registry entry):\n", deadResources, len(inc.LegacyKeys))
	fmt.Fprintf(d.out, "    %d of its tasks were running when it died, %d waiting tasks it had claimed, and\n", len(inc.Cancel), len(inc.Requeue))
	fmt.Fprintf(d.out, "    %d finished long ago: their locks leaked;\n", len(inc.Finished))
	fmt.Fprintf(d.out, "  - %d live workers run healthy tasks with %d task locks and %d resource holdings,\n", len(inc.LiveOwners), liveTasks, liveResources)
	fmt.Fprintf(d.out, "    so the audit reads %d task locks and %d resource holdings in all;\n", deadTasks+liveTasks, deadResources+liveResources)
	fmt.Fprintf(d.out, "  - %d queued tasks wait; those that need a repository the dead worker holds would wait forever.\n\n", len(inc.Queued))

	blocked := inc.Queued[0] // the first queued task needs one of the dead worker's repositories
	steps := []struct {
		title string
		args  []string
		want  int
		after func() error
	}{
		{title: "1. lock-reaper explain: why a queued task does not start", args: []string{"explain", blocked}, want: exitcode.OK},
		{title: "2. lock-reaper audit: what a pass would do (writes nothing)", args: []string{"audit"}, want: exitcode.Findings, after: func() error {
			causes, err := d.pageCauses(ctx)
			if err != nil {
				return fmt.Errorf("read the queue as the status page does: %w", err)
			}
			fmt.Fprintf(d.out, "%s\n", causes.paragraph())
			return nil
		}},
		{title: "3. lock-reaper once: release the stale locks, cancel and requeue the lost tasks", args: []string{"once"}, want: exitcode.OK},
		{title: "4. lock-reaper audit again: nothing left to do", args: []string{"audit"}, want: exitcode.OK},
		{title: "5. lock-reaper explain again: the queued task is free to run", args: []string{"explain", blocked}, want: exitcode.OK},
	}
	if d.noReap {
		steps = steps[:2]
	}
	for _, s := range steps {
		fmt.Fprintf(d.out, "━━ %s\n$ lock-reaper %s\n\n", s.title, strings.Join(s.args, " "))
		lim := &limitValue{n: limit, set: true}
		code := Main(ctx, Env{
			Args: append(s.args, "--limit", strconv.Itoa(limit)), Stdout: d.out, Stderr: io.Discard, Version: d.env.Version,
			LookupEnv: d.lookup, textLayout: d.layout(lim),
		})
		fmt.Fprintf(d.out, "(exit code %d)\n\n", code)
		if code != s.want {
			fmt.Fprintf(d.env.Stderr, "lock-reaper demo: step %q exited %d, expected %d\n", s.title, code, s.want)
			return exitcode.Failed
		}
		if s.after != nil {
			if err := s.after(); err != nil {
				fmt.Fprintf(d.env.Stderr, "lock-reaper demo: after step %q: %v\n", s.title, err)
				return exitcode.Failed
			}
		}
	}
	if d.noReap {
		fmt.Fprintf(d.out, "Stopped before the pass (--no-reap): nothing was released, the incident is as the audit reads it.\n")
		return exitcode.OK
	}
	after, err := d.pageCauses(ctx)
	if err != nil {
		fmt.Fprintf(d.env.Stderr, "lock-reaper demo: read the queue as the status page does: %v\n", err)
		return exitcode.Failed
	}
	fmt.Fprintf(d.out, "The dead worker's %d holdings are gone, its %d running tasks are canceled and its\n"+
		"%d claimed waiting tasks requeued; every healthy lock of the live workers is intact.\n"+
		"As the status page reads the queue now, %s", len(inc.Stale), len(inc.Cancel), len(inc.Requeue), after.headline())
	if after.blocked == 0 {
		fmt.Fprintf(d.out, ":\nthe queue moves, the next free worker takes the queued tasks")
	}
	fmt.Fprintf(d.out, ".\n")
	d.doctor(ctx)
	return exitcode.OK
}

// layout is the demo's text layout: grouped by owner and verdict, as on a
// terminal, so the most telling findings come first even when piped;
// the width and colours of the terminal when there is one.
func (d *demo) layout(limit *limitValue) *layout {
	l := layoutFor(d.out, d.env.LookupEnv, limit)
	l.grouped = true
	return &l
}
