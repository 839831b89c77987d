package cli

import (
	"regexp"
	"strings"
	"testing"

	"github.com/lock-reaper/lock-reaper/internal/exitcode"
	"github.com/stretchr/testify/require"
)

// Every command's help: on stdout with exit 0, starting with what it does,
// listing only the flags it uses, ending with its exit codes.
func TestEveryCommandHasHelp(t *testing.T) {
	t.Parallel()
	for name, c := range commands {
		for _, flag := range []string{"-h", "--help"} {
			code, out, stderr := run(t, nil, name, flag)
			require.Equal(t, exitcode.OK, code, name)
			require.Empty(t, stderr, name)
			require.True(t, strings.HasPrefix(out, "lock-reaper "+name+": "+c.summary+"\n"), "%s: %q", name, firstLine(out))
			last := c.exits[len(c.exits)-1]
			require.Regexp(t, regexp.MustCompile(`(?s)\nExit codes:\n.*  `+regexp.QuoteMeta(strings.Fields(last.what)[0])), out, name)
			require.True(t, strings.HasSuffix(strings.TrimSpace(out), lastWords(last.what)), "%s ends with %q", name, lastLine(out))
		}
		code, out, _ := run(t, nil, "help", name)
		require.Equal(t, exitcode.OK, code)
		require.True(t, strings.HasPrefix(out, "lock-reaper "+name+": "), name)
	}
}

func TestHelpListsOnlyTheFlagsACommandUses(t *testing.T) {
	t.Parallel()
	_, audit, _ := run(t, nil, "audit", "-h")
	for _, absent := range []string{"--force", "--schedule", "--listen", "--jitter", "--dry-run"} {
		require.NotContains(t, audit, "\n  "+absent)
	}
	for _, present := range []string{"--limit rows", "--redis-url url", "--pushgateway-url url", "--pushgateway-grouping name=value,...", "--max-releases int"} {
		require.Contains(t, audit, present)
	}
	// Durations read as `config` prints them; no help text is cut mid-sentence.
	require.Contains(t, audit, "(finished_grace, REAPER_FINISHED_GRACE; default 1m)")
	require.Contains(t, audit, "keywords. Empty: libpq's PG* environment")
	_, runHelp, _ := run(t, nil, "run", "-h")
	require.Contains(t, runHelp, "--schedule cron")
	require.NotContains(t, runHelp, "--pushgateway-url")
	require.NotContains(t, runHelp, "--pushgateway-grouping")
	_, once, _ := run(t, nil, "once", "-h")
	require.Contains(t, once, "--force\n")

	code, _, stderr := run(t, nil, "audit", "--schedule", "@hourly")
	require.Equal(t, exitcode.Usage, code)
	require.Contains(t, stderr, "--schedule (schedule) is not used by audit")
	code, _, stderr = run(t, nil, "audit", "--no-such-flag")
	require.Equal(t, exitcode.Usage, code)
	require.Contains(t, stderr, "lock-reaper audit: unknown flag --no-such-flag\n")
	require.Contains(t, stderr, "Run 'lock-reaper audit -h' for its flags.")
}

// A mistyped flag is named with the nearest one the command uses, as a
// mistyped setting is; only flags the command accepts are suggested.
func TestUnknownFlagSuggestsTheNearest(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"once", "--dryrun"}, "lock-reaper once: unknown flag --dryrun; did you mean --dry-run?\n"},
		{[]string{"release", "--ownr", "x"}, "lock-reaper release: unknown flag --ownr; did you mean --owner?\n"},
		{[]string{"locks", "--limt", "3"}, "lock-reaper locks: unknown flag --limt; did you mean --limit?\n"},
		{[]string{"explain", "0190c2d1-aaaa-7bbb-8ccc-000000000042", "--redis-ulr", "x"}, "lock-reaper explain: unknown flag --redis-ulr; did you mean --redis-url?\n"},
		// run uses --schedule; audit does not, so it is not offered there.
		{[]string{"run", "--schedul", "x"}, "did you mean --schedule?"},
		{[]string{"audit", "--schedul", "x"}, "lock-reaper audit: unknown flag --schedul\n"},
	} {
		code, _, stderr := run(t, nil, c.args...)
		require.Equal(t, exitcode.Usage, code, c.args)
		require.Contains(t, stderr, c.want, c.args)
		require.NotContains(t, stderr, "flag provided but not defined", c.args)
	}
	// Other parse errors keep the flag package's words.
	_, _, stderr := run(t, nil, "locks", "--limit", "many")
	require.Contains(t, stderr, `invalid value "many" for flag -limit`)
}

func TestTopLevelHelpAndVersion(t *testing.T) {
	t.Parallel()
	for _, arg := range []string{"-h", "--help", "help"} {
		code, out, stderr := run(t, nil, arg)
		require.Equal(t, exitcode.OK, code)
		require.Empty(t, stderr)
		require.Contains(t, out, "Usage: lock-reaper COMMAND [flags]")
	}
	code, out, _ := run(t, nil, "--version")
	require.Equal(t, exitcode.OK, code)
	require.Equal(t, "lock-reaper test", firstLine(out))
	code, out, stderr := run(t, nil)
	require.Equal(t, exitcode.Usage, code)
	require.Empty(t, out)
	require.Contains(t, stderr, "Usage: lock-reaper COMMAND")
}

func TestWrapText(t *testing.T) {
	t.Parallel()
	require.Equal(t, "  a b\n  c\n", wrapText("a b c", "  ", 6))
	require.Equal(t, "  1  one two\n     three\n", hangingText("  1  ", "one two three", 13))
}

func firstLine(s string) string { l, _, _ := strings.Cut(s, "\n"); return l }

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

func lastWords(s string) string {
	f := strings.Fields(s)
	return f[len(f)-1]
}
