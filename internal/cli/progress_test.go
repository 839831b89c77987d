package cli

import (
	"bytes"
	"io"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/reaper"
)

// drive runs a pass's worth of progress calls with a log record in the
// middle of the releases.
func drive(p *progress, log io.Writer) {
	p.keys(1000)
	p.phase(reaper.PhaseReadingDatabase, 0, 0)
	p.phase(reaper.PhaseReleasing, 1000, 2000)
	_, _ = io.WriteString(log, "INF released holding key=task:1\n")
	p.phase(reaper.PhaseUpdatingTasks, 3, 3)
	p.done()
}

func TestProgressPrintsNothingOffATerminal(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	p := newProgress(&buf, "auto")
	drive(p, p)
	require.Equal(t, "INF released holding key=task:1\n", buf.String(), "logs pass through untouched")
	require.False(t, isTerminal(p))
}

func TestProgressPrintsNothingBesideJSONLogs(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	p := wrapStderr(&buf)
	p.terminal = func(io.Writer) bool { return true }
	p.enable("json")
	drive(p, p)
	require.Equal(t, "INF released holding key=task:1\n", buf.String())
}

// TestProgressOnATerminal checks the line as a terminal receives it: each
// phase at once, redraws within a phase at most every progressInterval, a
// log record on a line of its own with the progress line drawn again below.
func TestProgressOnATerminal(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	clock := time.Date(2026, 7, 24, 10, 0, 0, 0, time.UTC)
	p := wrapStderr(&buf)
	p.terminal = func(io.Writer) bool { return true }
	p.now = func() time.Time { return clock }
	p.enable("text")

	p.keys(1000)
	p.keys(2000) // same phase, too soon: not drawn
	clock = clock.Add(progressInterval)
	p.keys(3000)
	p.phase(reaper.PhaseReadingDatabase, 0, 0)
	p.phase(reaper.PhaseReleasing, 1000, 2000)
	_, _ = io.WriteString(p, "INF released holding key=task:1\n")
	p.phase(reaper.PhaseReleasing, 2000, 2000) // too soon
	p.phase(reaper.PhaseUpdatingTasks, 3, 3)
	p.done()
	p.done() // nothing left to clear

	const clear = "\r\033[K"
	require.Equal(t, clear+"reading lock keys: 1000 read…"+
		clear+"reading lock keys: 3000 read…"+
		clear+"reading the database…"+
		clear+"releasing holdings: 1000 of 2000…"+
		clear+"INF released holding key=task:1\n"+"releasing holdings: 1000 of 2000…"+
		clear+"updating tasks: 3 of 3…"+
		clear, buf.String())
}

// TestProgressOnAPty runs the real terminal check: through a pseudo-terminal
// the logger picks text and the progress line is drawn.
func TestProgressOnAPty(t *testing.T) {
	t.Parallel()
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal here: %v", err)
	}
	defer ptmx.Close()
	read := make(chan string)
	go func() {
		var out bytes.Buffer
		_, _ = io.Copy(&out, ptmx) // ends with EIO once tty is closed
		read <- out.String()
	}()

	p := newProgress(tty, "auto")
	require.True(t, isTerminal(p), "the wrapper shows the terminal through")
	logger, err := newLogger(p, "auto", "info")
	require.NoError(t, err)
	p.keys(42)
	logger.Info("released holding")
	p.phase(reaper.PhaseReleasing, 1, 2)
	p.done()
	require.NoError(t, tty.Close())
	out := <-read

	require.Contains(t, out, "reading lock keys: 42 read…")
	require.Contains(t, out, "releasing holdings: 1 of 2…")
	// The line is cleared, the record written on its own line, the line
	// drawn again below it.
	require.Regexp(t, regexp.MustCompile(`read…\r\x1b\[K[^\r\n]*INF[^\r\n]*released holding[^\r\n]*\r?\nreading lock keys: 42 read…`), out)
	require.NotContains(t, out, `{"time"`, "text logs on a terminal")
	require.True(t, strings.HasSuffix(out, "\r\033[K"), "done clears the line: %q", out)
}

// A line wider than the terminal is cut short of its last column: a line
// that wrapped would leave its first row on screen when cleared, and the
// next log record would follow it.
func TestProgressLineFitsTheTerminal(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	p := wrapStderr(&buf)
	p.terminal = func(io.Writer) bool { return true }
	p.width = func(io.Writer) int { return 40 }
	p.enable("text")
	p.phase(reaper.PhaseRecheckingHeartbeats, 0, 0)
	_, _ = io.WriteString(p, "WRN guard held work back\n")
	p.done()
	const clear = "\r\033[K"
	line := "some workers look dead: reading their …"
	require.Equal(t, 39, len([]rune(line)))
	require.Equal(t, clear+line+clear+"WRN guard held work back\n"+line+clear, buf.String())

	require.Equal(t, "short", fitLine("short", 40))
	require.Equal(t, "no limit known", fitLine("no limit known", 0))
}
