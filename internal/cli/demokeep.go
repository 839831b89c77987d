package cli

import (
	"fmt"
	"strings"
)

// printKept says where the demo's state is, the commands that explore it,
// each naming the demo's servers with its flags, and the command that
// removes it; it then lets go of the state without removing it.
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
	fmt.Fprintf(d.out, "The live workers' heartbeats stopped with the demo: after their TTL they look dead too,\n"+
		"and the mass-death guard holds a pass back, as it would in a real outage.\n")
	fmt.Fprintf(d.out, "Remove it:\n")
	if d.own != nil {
		fmt.Fprintf(d.out, "  %s\n", d.own.Keep())
	} else {
		fmt.Fprintf(d.out, "  psql %s -c 'DROP DATABASE %s WITH (FORCE)'\n", shellWord(d.admin), d.dbName)
		fmt.Fprintf(d.out, "  redis-cli -u %s FLUSHDB\n", shellWord(d.redisURL))
	}
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
