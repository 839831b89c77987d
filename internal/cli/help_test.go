package cli

import (
	"regexp"
	"strings"
	"testing"

	"github.com/lock-reaper/lock-reaper/internal/exitcode"
	"github.com/stretchr/testify/require"
)

// Every command's help: on stdout with exit 0, starting with what it does,
// listing only the flags it binds, ending with its exit codes; `help
// COMMAND` prints the same.
func TestEveryCommandHasHelp(t *testing.T) {
	t.Parallel()
	for _, c := range commands() {
		name := c.name
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
		_, viaFlag, _ := run(t, nil, name, "--help")
		require.Equal(t, viaFlag, out, name)
	}
}

// A command binds only the keys it uses: the others are no flags of it,
// neither in its help nor on its command line, where they are named as
// settings it does not use.
func TestHelpListsOnlyTheFlagsACommandUses(t *testing.T) {
	t.Parallel()
	_, audit, _ := run(t, nil, "audit", "-h")
	for _, absent := range []string{"--force", "--schedule", "--listen", "--jitter", "--dry-run", "--help"} {
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
	_, config, _ := run(t, nil, "config", "-h")
	require.Contains(t, config, "--schedule cron")
	require.Contains(t, config, "--pushgateway-url url")

	code, _, stderr := run(t, nil, "audit", "--schedule", "@hourly")
	require.Equal(t, exitcode.Usage, code)
	require.Contains(t, stderr, "lock-reaper audit: unknown flag --schedule: schedule is a setting audit does not use\n")
	code, _, stderr = run(t, nil, "audit", "--no-such-flag")
	require.Equal(t, exitcode.Usage, code)
	require.Contains(t, stderr, "lock-reaper audit: unknown flag --no-such-flag\n")
	require.Contains(t, stderr, "Run 'lock-reaper audit --help' for its usage.")
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
		{[]string{"once", "--outptu", "json"}, "lock-reaper once: unknown flag --outptu; did you mean --output?\n"},
		{[]string{"release", "--ownr", "x"}, "lock-reaper release: unknown flag --ownr; did you mean --owner?\n"},
		{[]string{"locks", "--limt", "3"}, "lock-reaper locks: unknown flag --limt; did you mean --limit?\n"},
		{[]string{"explain", "0190c2d1-aaaa-7bbb-8ccc-000000000042", "--redis-ulr", "x"}, "lock-reaper explain: unknown flag --redis-ulr; did you mean --redis-url?\n"},
		// run uses --schedule; audit does not, so it is not offered there.
		{[]string{"run", "--schedul", "x"}, "did you mean --schedule?"},
		{[]string{"audit", "--schedul", "x"}, "lock-reaper audit: unknown flag --schedul\n"},
		// Go's single-dash long flags are gone, and said to be.
		{[]string{"audit", "-output", "json"}, "lock-reaper audit: unknown flag -output; long flags take two dashes: --output\n"},
	} {
		code, _, stderr := run(t, nil, c.args...)
		require.Equal(t, exitcode.Usage, code, c.args)
		require.Contains(t, stderr, c.want, c.args)
	}
	// Other parse errors keep pflag's words, and are usage errors too.
	code, _, stderr := run(t, nil, "locks", "--limit", "many")
	require.Equal(t, exitcode.Usage, code)
	require.Contains(t, stderr, `invalid argument "many" for "--limit" flag: want a number of rows, 0 for all`)
	code, _, stderr = run(t, nil, "release", "--owner")
	require.Equal(t, exitcode.Usage, code)
	require.Contains(t, stderr, "flag needs an argument: --owner")
}

// A mistyped command is named with the nearest one, and is a usage error;
// so are arguments a command does not take.
func TestUnknownCommandSuggestsTheNearest(t *testing.T) {
	t.Parallel()
	code, out, stderr := run(t, nil, "onse")
	require.Equal(t, exitcode.Usage, code)
	require.Empty(t, out)
	require.Contains(t, stderr, `lock-reaper: unknown command "onse"; did you mean once?`)
	require.Contains(t, stderr, "Usage: lock-reaper COMMAND [flags]")
	code, _, stderr = run(t, nil, "lokcs")
	require.Equal(t, exitcode.Usage, code)
	require.Contains(t, stderr, "did you mean locks?")
	code, _, stderr = run(t, nil, "nothing-like-it")
	require.Equal(t, exitcode.Usage, code)
	require.NotContains(t, stderr, "did you mean")

	// help of an unknown command lists the commands, as help does.
	code, out, stderr = run(t, nil, "help", "onse")
	require.Equal(t, exitcode.OK, code)
	require.Contains(t, out, "Usage: lock-reaper COMMAND [flags]")
	require.Contains(t, stderr, "did you mean once?")

	for _, args := range [][]string{{"version", "extra"}, {"audit", "extra"}, {"completion", "bash", "zsh"}} {
		code, _, stderr = run(t, nil, args...)
		require.Equal(t, exitcode.Usage, code, args)
		require.Contains(t, stderr, `unexpected argument "`+args[len(args)-1]+`"`, args)
	}
}

func TestTopLevelHelpAndVersion(t *testing.T) {
	t.Parallel()
	for _, arg := range []string{"-h", "--help", "help"} {
		code, out, stderr := run(t, nil, arg)
		require.Equal(t, exitcode.OK, code)
		require.Empty(t, stderr)
		require.Contains(t, out, "Usage: lock-reaper COMMAND [flags]")
		for _, c := range commands() {
			require.Contains(t, out, "\n  "+c.name+" ", arg)
		}
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
