package cli

import (
	"fmt"
	"io"
	"sync"
	"time"
	"unicode/utf8"

	"golang.org/x/term"

	"github.com/lock-reaper/lock-reaper/reaper"
)

// progressInterval is how often the line is redrawn within one phase; a new
// phase is shown at once.
const progressInterval = 200 * time.Millisecond

// progressKeys names the phase of reading lock keys, which the reaper
// reports through Options.Progress rather than Phase.
const progressKeys = "reading keys"

// progress shows, on a terminal only, where a long pass is: the lock keys
// read so far, then reading the database, then the holdings released and
// the tasks updated, batch by batch, on one line that it redraws. On
// anything else (a CronJob's log, a pipe, a file) it prints nothing, nor
// when the logs are JSON, which a terminal line would break.
//
// It is also an io.Writer for the logger: a log record written through it
// first clears the progress line and then redraws it below, so log lines
// and the progress line never share a line.
type progress struct {
	mu       sync.Mutex
	out      io.Writer
	terminal func(io.Writer) bool
	width    func(io.Writer) int
	now      func() time.Time
	on       bool
	current  string // the phase on screen
	last     time.Time
	line     string // the text on screen; "" when nothing is
}

// newProgress returns a progress drawing on w, if w is a terminal and the
// logs are not JSON. The logs must go through it too (see
// progressStderr), or a record may land on the line's end.
func newProgress(w io.Writer, logFormat string) *progress {
	p := wrapStderr(w)
	p.enable(logFormat)
	return p
}

// progressStderr makes env's stderr a progress that draws nothing yet, for
// a command that shows the line while it reads or releases: the logger
// newReaper makes, and every line the command writes to stderr, then go
// through it, so that each starts on a line of its own. The command calls
// enable once the log format is known.
func progressStderr(env *Env) *progress {
	p := wrapStderr(env.Stderr)
	env.Stderr = p
	return p
}

// wrapStderr returns a progress that draws nothing yet and passes writes
// through to w. Make the logger write to it, then call enable once the log
// format is known.
func wrapStderr(w io.Writer) *progress {
	return &progress{out: w, terminal: isTerminal, width: terminalWidth, now: time.Now}
}

// enable turns drawing on when the wrapped writer is a terminal and the log
// format is not JSON.
func (p *progress) enable(logFormat string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.on = p.terminal(p.out) && logFormat != "json"
}

// keys is called by the reaper after each batch of keys it reads.
func (p *progress) keys(n int) {
	p.show(progressKeys, fmt.Sprintf("reading lock keys: %d read…", n))
}

// phase is called by the reaper as the pass moves on (Options.Phase).
func (p *progress) phase(name string, done, total int) {
	switch name {
	case reaper.PhaseReadingDatabase:
		p.show(name, "reading the database…")
	case reaper.PhaseRecheckingHeartbeats:
		p.show(name, "some workers look dead: reading their heartbeats again a period on before acting…")
	case reaper.PhaseReleasing:
		p.show(name, fmt.Sprintf("releasing holdings: %d of %d…", done, total))
	case reaper.PhaseUpdatingTasks:
		p.show(name, fmt.Sprintf("updating tasks: %d of %d…", done, total))
	}
}

// show replaces the line with text: at once for a new phase, at most every
// progressInterval within one.
func (p *progress) show(phase, text string) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.on {
		return
	}
	now := p.now()
	if phase == p.current && now.Sub(p.last) < progressInterval {
		return
	}
	text = fitLine(text, p.width(p.out))
	p.current, p.last, p.line = phase, now, text
	fmt.Fprint(p.out, "\r\033[K"+text)
}

// fitLine cuts text to fewer than width columns (no limit when width <= 0):
// a line that wrapped would leave its first rows on screen when cleared,
// and the next log record would follow them. The line is prose, never an
// identifier to copy, so cutting it loses nothing.
func fitLine(text string, width int) string {
	if width <= 0 || utf8.RuneCountInString(text) < width {
		return text
	}
	r := []rune(text)
	return string(r[:max(width-2, 0)]) + "…"
}

// terminalWidth is the columns of the terminal w is, asked at each draw so
// that a resized window is followed; 0 when unknown.
func terminalWidth(w io.Writer) int {
	f, ok := w.(interface{ Fd() uintptr })
	if !ok {
		return 0
	}
	cols, _, err := term.GetSize(int(f.Fd()))
	if err != nil {
		return 0
	}
	return cols
}

// done clears the line; the report comes next.
func (p *progress) done() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.line != "" {
		fmt.Fprint(p.out, "\r\033[K")
		p.line = ""
	}
}

// Write writes log output: the progress line is cleared first and drawn
// again after, below the record.
func (p *progress) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.line == "" {
		return p.out.Write(b)
	}
	if _, err := io.WriteString(p.out, "\r\033[K"); err != nil {
		return 0, err
	}
	n, err := p.out.Write(b)
	if err == nil {
		_, err = io.WriteString(p.out, p.line)
	}
	return n, err
}

// Fd is the wrapped writer's file descriptor, so that isTerminal sees the
// terminal through the wrapper; an invalid descriptor when it has none.
func (p *progress) Fd() uintptr {
	if f, ok := p.out.(interface{ Fd() uintptr }); ok {
		return f.Fd()
	}
	return ^uintptr(0)
}
