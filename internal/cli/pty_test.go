package cli

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/lock-reaper/lock-reaper/internal/exitcode"
	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/internal/testing/testenv"
)

// onTerminal runs the command with a pseudo-terminal as stdout and stdin,
// cols wide, typing input; it returns the exit code, what the terminal
// showed and stderr.
func onTerminal(t *testing.T, env map[string]string, cols uint16, input string, args ...string) (int, string, string) {
	t.Helper()
	return terminalRun(t, env, cols, input, false, args...)
}

// terminalRun is onTerminal; with logsToo stderr is the terminal as well,
// and what it showed includes the logs.
func terminalRun(t *testing.T, env map[string]string, cols uint16, input string, logsToo bool, args ...string) (int, string, string) {
	t.Helper()
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal here: %v", err)
	}
	defer ptmx.Close()
	require.NoError(t, pty.Setsize(ptmx, &pty.Winsize{Cols: cols, Rows: 50}))
	var shown bytes.Buffer
	copied := make(chan struct{})
	go func() { _, _ = io.Copy(&shown, ptmx); close(copied) }()
	if input != "" {
		_, err := ptmx.Write([]byte(input))
		require.NoError(t, err)
	}
	var stderr bytes.Buffer
	var errOut io.Writer = &stderr
	if logsToo {
		errOut = tty
	}
	code := Main(context.Background(), Env{
		Args: args, Stdin: tty, Stdout: tty, Stderr: errOut, Version: "test",
		LookupEnv: testenv.LookupEnv(env),
	})
	tty.Close()
	select {
	case <-copied:
	case <-time.After(5 * time.Second):
	}
	return code, strings.ReplaceAll(shown.String(), "\r\n", "\n"), stderr.String()
}

func withEnv(env map[string]string, kv ...string) map[string]string {
	out := map[string]string{}
	for k, v := range env {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i]] = kv[i+1]
	}
	return out
}

// Verdicts are coloured on a terminal, never with NO_COLOR or when piped;
// the report fits the terminal's width.
func TestTerminalColourAndWidth(t *testing.T) {
	t.Parallel()
	f := newOpsReleaseFleet(t)
	code, shown, stderr := onTerminal(t, f.env, 60, "", "audit")
	require.Contains(t, []int{exitcode.Findings, exitcode.Guarded}, code, stderr)
	require.Contains(t, shown, ansiRed+"owner-dead"+ansiReset)
	require.Contains(t, shown, "Findings: ")
	requireFitsWidth(t, "audit at 60 columns", stripANSI(shown), 60)

	_, shown, _ = onTerminal(t, withEnv(f.env, "NO_COLOR", "1"), 100, "", "audit")
	require.NotContains(t, shown, "\x1b[")
	require.Contains(t, shown, "owner-dead")

	_, piped, _ := run(t, f.env, "audit")
	require.NotContains(t, piped, "\x1b[")
	require.Contains(t, piped, "Findings (holdings that are not healthy)")
}

// The release prompt on a real terminal: no is exit 5 and writes nothing,
// yes releases.
func TestReleasePromptOnTerminal(t *testing.T) {
	t.Parallel()
	f := newOpsReleaseFleet(t)
	code, _, stderr := onTerminal(t, f.env, 100, "n\n", "release", "--owner", "1@dead")
	require.Equal(t, exitAborted, code, stderr)
	require.Contains(t, stderr, "Release 6 holdings of 1@dead and update 2 tasks? [y/N] ")
	require.Contains(t, stderr, "aborted; nothing was written")
	f.requireUntouched()

	code, shown, stderr := onTerminal(t, f.env, 100, "y\n", "release", "--owner", "1@dead")
	require.Equal(t, exitcode.OK, code, stderr)
	require.Contains(t, shown, "released 6 holdings")
	require.False(t, f.holds("1@dead", f.running))
}

// On a terminal the logs say once per owner how many holdings were
// released, not once per holding; --log-level debug brings the line per
// holding back, and piped (JSON) logs always keep it, the audit trail, with
// its ages in seconds.
func TestReleaseLogsOneLinePerOwnerOnTerminal(t *testing.T) {
	t.Parallel()
	f := newOpsReleaseFleet(t)
	env := withEnv(f.env, "REAPER_LOG_FORMAT", "auto")
	code, shown, _ := terminalRun(t, env, 200, "", true, "release", "--owner", "1@dead", "--yes")
	require.Equal(t, exitcode.OK, code, shown)
	shown = stripANSI(shown)
	require.Equal(t, 1, strings.Count(shown, "released holdings"), shown)
	require.Regexp(t, `INF released holdings owner=1@dead holdings=6\n`, shown)
	require.NotContains(t, shown, "released holding ", "no line per holding:\n%s", shown)
	require.Less(t, strings.Index(shown, "released holdings"), strings.Index(shown, "Summary: released 6 holdings"), "the owner's line comes before the report")

	g := newOpsReleaseFleet(t)
	_, shown, _ = terminalRun(t, withEnv(g.env, "REAPER_LOG_FORMAT", "auto", "REAPER_LOG_LEVEL", "debug"), 200, "", true, "release", "--owner", "1@dead", "--yes")
	require.Equal(t, 6, strings.Count(stripANSI(shown), "released holding "), shown)

	h := newOpsReleaseFleet(t)
	code, _, logs := run(t, withEnv(h.env, "REAPER_LOG_FORMAT", "auto"), "release", "--owner", "1@dead", "--yes")
	require.Equal(t, exitcode.OK, code, logs)
	require.Equal(t, 6, strings.Count(logs, `"msg":"released holding"`), logs)
	require.Contains(t, logs, `"heartbeat_age_seconds":`)
	require.NotContains(t, logs, `"msg":"released holdings"`)
}

func stripANSI(s string) string {
	for {
		i := strings.Index(s, "\x1b[")
		if i < 0 {
			return s
		}
		j := strings.IndexByte(s[i:], 'm')
		if j < 0 {
			return s
		}
		s = s[:i] + s[i+j+1:]
	}
}

// The progress line and a log record never share a line: a record written
// while the line is on screen (the alive-owner guard's warning, in the
// middle of the release's pass) starts on a line of its own, for every
// command that draws the line, and the line is gone when the report comes.
func TestProgressLineAndLogsNeverShareALine(t *testing.T) {
	t.Parallel()
	f := newOpsReleaseFleet(t)
	env := withEnv(f.env, "REAPER_LOG_FORMAT", "auto")
	code, shown, _ := terminalRun(t, env, 200, "", true, "release", "--owner", "1@live", "--yes")
	require.Equal(t, exitcode.Guarded, code, shown)
	require.Contains(t, shown, "reading lock keys: ", "the progress line was drawn")
	screen := screenLines(shown)
	guard := -1
	for i, line := range screen {
		if strings.Contains(line, "guard held work back") {
			guard = i
			require.Regexp(t, `^\d\d:\d\d:\d\d WRN guard held work back`, line, "the record starts its line:\n%s", strings.Join(screen, "\n"))
		}
		require.False(t, strings.Contains(line, "read…") && strings.Contains(line, " WRN "), "shared line %q", line)
	}
	require.GreaterOrEqual(t, guard, 0, strings.Join(screen, "\n"))
	require.NotContains(t, strings.Join(screen, "\n"), "read…", "the line is cleared before the report")

	// A key that is no Pulp lock is warned of as the keys are read, while
	// locks and explain show the line.
	require.NoError(t, f.r.Client.Set(f.ctx, "task:not-a-uuid", "x", 0).Err())
	for _, args := range [][]string{{"locks"}, {"explain", f.running}} {
		code, shown, _ := terminalRun(t, env, 200, "", true, args...)
		require.Equal(t, exitcode.OK, code, shown)
		require.Contains(t, shown, "reading lock keys: ", "%s: the progress line was drawn", args[0])
		screen := screenLines(shown)
		found := false
		for _, line := range screen {
			if strings.Contains(line, "ignored key") {
				found = true
				require.Regexp(t, `^\d\d:\d\d:\d\d WRN ignored key`, line, "%s: the record starts its line:\n%s", args[0], strings.Join(screen, "\n"))
			}
		}
		require.True(t, found, "%s:\n%s", args[0], strings.Join(screen, "\n"))
		require.NotContains(t, strings.Join(screen, "\n"), "read…", "%s: the line is cleared before the output", args[0])
	}
}

// screenLines is what a terminal shows of out, line by line: a carriage
// return goes back to the line's start, ESC [ K erases to its end, other
// escape sequences (colours) show nothing, and a character overwrites what
// is under the cursor.
func screenLines(out string) []string {
	var lines []string
	for _, raw := range strings.Split(out, "\n") {
		var line []rune
		col := 0
		rs := []rune(raw)
		for i := 0; i < len(rs); i++ {
			switch {
			case rs[i] == '\r':
				col = 0
			case rs[i] == '\x1b' && i+1 < len(rs) && rs[i+1] == '[':
				j := i + 2
				for j < len(rs) && !(rs[j] >= '@' && rs[j] <= '~') {
					j++
				}
				if j < len(rs) && rs[j] == 'K' {
					line = line[:min(col, len(line))]
				}
				i = j
			default:
				if col < len(line) {
					line[col] = rs[i]
				} else {
					line = append(line, rs[i])
				}
				col++
			}
		}
		lines = append(lines, string(line))
	}
	return lines
}
