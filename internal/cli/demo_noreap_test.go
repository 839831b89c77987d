package cli

import (
	"context"
	"net"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/internal/exitcode"
)

// keptCommands are the lock-reaper commands a kept demo prints, as argument
// lists (the shell's single quotes removed), by command name.
func keptCommands(t *testing.T, out string) map[string][]string {
	t.Helper()
	words := regexp.MustCompile(`'[^']*'|\S+`)
	cmds := map[string][]string{}
	for _, line := range strings.Split(out, "\n") {
		rest, ok := strings.CutPrefix(line, "  lock-reaper ")
		if !ok {
			continue
		}
		var args []string
		for _, w := range words.FindAllString(rest, -1) {
			args = append(args, strings.Trim(w, "'"))
		}
		cmds[args[0]] = args
	}
	return cmds
}

// demo --no-reap --keep, on the servers the demo starts itself: the
// incident is built, explained and audited, nothing is released, and it is
// left running with the commands that explore it, which answer as printed,
// and the command that removes it, which does.
func TestDemoNoReapKeep(t *testing.T) {
	t.Parallel()
	f := startForeground(t, func(ctx context.Context, env Env) int {
		env.Args = []string{"demo", "--no-reap", "--keep"}
		return Main(ctx, env)
	})
	out := f.out.String()
	remove := regexp.MustCompile(`(?m)^  (kill \d+; .*pg_ctl.* stop; rm -rf (\S+))$`).FindStringSubmatch(out)
	require.Len(t, remove, 3, "the command that removes the kept servers:\n%s", out)
	t.Cleanup(func() { _ = exec.Command("sh", "-c", remove[1]).Run() })

	require.Contains(t, out, "BLOCKS", "explain shows the queued task blocked")
	require.Contains(t, out, "2. lock-reaper audit")
	require.NotContains(t, out, "3. lock-reaper once", "no pass")
	require.NotContains(t, out, "released 1067 holdings")
	require.Contains(t, out, "Stopped before the pass (--no-reap)")
	require.Contains(t, out, "The demo's state is kept (--keep), before any pass")
	require.NotContains(t, out, "Removed the demo database")
	require.Contains(t, out, "The live workers keep heartbeating while the demo runs")
	redisURL, dbURL := keptURLs(t, out)
	requireDemoWordsMatchPage(t, out, redisURL, dbURL)

	cmds := keptCommands(t, out)
	for _, name := range []string{"status", "explain", "locks", "release", "audit", "run"} {
		require.Contains(t, cmds, name, "the commands to explore it:\n%s", out)
		require.Contains(t, cmds[name], "--redis-url")
		require.Contains(t, cmds[name], "--database-url")
	}
	code, text, stderr := run(t, nil, cmds["explain"]...)
	require.Equal(t, exitcode.OK, code, stderr)
	require.True(t, strings.Contains(text, "BLOCKS"), "the kept incident still blocks the queued task:\n%s", text)
	code, text, stderr = run(t, nil, cmds["locks"]...)
	require.Equal(t, exitcode.OK, code, stderr)
	require.True(t, strings.Contains(text, "1@pulp-worker-incident-1"), "the live workers' holdings too:\n%.2000s", text)
	require.Contains(t, cmds["release"], "--dry-run")
	code, text, stderr = run(t, nil, cmds["release"]...)
	require.NotEqual(t, exitcode.Usage, code, "%s\n%s", text, stderr)
	require.True(t, strings.Contains(text, "1@pulp-worker-incident-0  dead"), "the dead worker's locks, in the dry run:\n%.2000s", text)
	require.True(t, strings.Contains(text, "dry run: nothing was written"), "a dry run:\n%.2000s", text)
	require.False(t, strings.Contains(text, "mass-death"), "the live workers are still alive:\n%.2000s", text)

	require.Equal(t, exitcode.OK, f.interrupt(t), f.errOut.String())
	require.Contains(t, f.out.String(), "Stopped the live workers' heartbeats; the state is kept.")
	dir := remove[2]
	require.DirExists(t, dir)
	rm, err := exec.Command("sh", "-c", remove[1]).CombinedOutput()
	require.NoError(t, err, "%s", rm)
	require.NoDirExists(t, dir)
	_, err = os.Stat(dir)
	require.True(t, os.IsNotExist(err))
	addr := strings.TrimSuffix(strings.TrimPrefix(redisURL, "redis://"), "/0")
	if conn, err := net.Dial("tcp", addr); err == nil {
		conn.Close()
		t.Errorf("the kept Redis on %s still accepts connections after the removal command", addr)
	}
}

// demo --no-reap without --keep stops before the pass and removes what it made.
func TestDemoNoReap(t *testing.T) {
	t.Parallel()
	code, out, stderr := run(t, nil, "demo", "--no-reap")
	require.Equal(t, exitcode.OK, code, "%s\n%s", out, stderr)
	require.Contains(t, out, "Stopped before the pass (--no-reap)")
	require.NotContains(t, out, "3. lock-reaper once")
	require.Contains(t, out, "Removed the demo database")
	require.Empty(t, regexp.MustCompile(`/\S*lock-reaper-demo-\w+`).FindString(out+stderr), "nothing kept, nothing shown")
}
