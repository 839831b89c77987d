package cli

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/lock-reaper/lock-reaper/internal/sim"
)

// printKept says where the demo's state is, the commands that explore it,
// each naming the demo's servers with its flags, and the command that
// removes it.
func (d *demo) printKept() {
	flags := fmt.Sprintf("--redis-url %s --database-url %s", shellWord(d.redisURL), shellWord(d.dbURL))
	state := "after the pass"
	if d.noReap {
		state = "before any pass: the incident itself"
	}
	fmt.Fprintf(d.out, "\nThe demo's state is kept (--keep), %s. Explore it:\n", state)
	for _, c := range []struct{ cmd, what string }{
		{"status --listen " + statusListenDefault, "the status page on http://" + statusListenDefault + "/"},
		{"explain " + d.inc.Queued[0], "why the queued task waits"},
		{"locks --by-owner", "every holding, by owner"},
		{"release --owner " + d.inc.DeadOwner + " --dry-run", "what releasing the dead worker's locks would do"},
		{"audit", "what a pass would do"},
		{"run --listen 127.0.0.1:9090", "the daemon, with /metrics"},
	} {
		fmt.Fprintf(d.out, "  # %s\n  lock-reaper %s %s\n", c.what, c.cmd, flags)
	}
	if !d.noReap {
		fmt.Fprintf(d.out, "The live workers' heartbeats stopped with the demo: after their TTL (%s) they look dead too,\n"+
			"and the mass-death guard holds a pass back, as it would in a real outage.\n", d.ttl())
	}
	fmt.Fprintf(d.out, "Remove it:\n")
	if d.own != nil {
		fmt.Fprintf(d.out, "  %s\n", d.own.Keep())
	} else {
		fmt.Fprintf(d.out, "  psql %s -c 'DROP DATABASE %s WITH (FORCE)'\n", shellWord(d.admin), d.dbName)
		fmt.Fprintf(d.out, "  redis-cli -u %s FLUSHDB\n", shellWord(d.redisURL))
	}
}

// beatUntil keeps the live workers heartbeating, in the foreground, until
// ctx ends (Ctrl-C): the kept incident stays one dead worker among live
// ones for as long as it is explored, instead of decaying after a TTL into
// the mass death the guard holds back. It says when the beats stop.
func (d *demo) beatUntil(ctx context.Context) {
	fmt.Fprintf(d.out, "\nThe live workers keep heartbeating while the demo runs, so the incident stays as it is.\n"+
		"Explore it from another terminal; press Ctrl-C to stop the heartbeats (the state stays).\n")
	<-ctx.Done()
	if d.stopBeat != nil {
		_ = d.stopBeat()
		d.stopBeat = nil
	}
	fmt.Fprintf(d.out, "\nStopped the live workers' heartbeats; the state is kept. After their TTL (%s) they look dead\n"+
		"too, and the mass-death guard holds a pass back, as it would in a real outage.\n", d.ttl())
}

// ttl is the live workers' TTL: how long after their last beat they look dead.
func (d *demo) ttl() time.Duration {
	if d.spec.TTL > 0 {
		return d.spec.TTL
	}
	return sim.DefaultWorkerTTL
}

// letGo stops the heartbeats and closes the demo's connections without
// removing its state.
func (d *demo) letGo() {
	if d.stopBeat != nil {
		_ = d.stopBeat()
	}
	if d.pool != nil {
		d.pool.Close()
	}
	if d.rdb != nil {
		_ = d.rdb.Close()
	}
}

// shellWord quotes s for a POSIX shell.
func shellWord(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
