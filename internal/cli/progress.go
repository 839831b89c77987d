package cli

import (
	"fmt"
	"io"
	"sync"
	"time"

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
	now      func() time.Time
	on       bool
	current  string // the phase on screen
	last     time.Time
	line     string // the text on screen; "" when nothing is
}

// newProgress returns a progress drawing on w, if w is a terminal and the
// logs are not JSON.
func newProgress(w io.Writer, logFormat string) *progress {
	p := wrapStderr(w)
	p.enable(logFormat)
	return p
}

// wrapStderr returns a progress that draws nothing yet and passes writes
// through to w. Make the logger write to it, then call enable once the log
// format is known.
func wrapStderr(w io.Writer) *progress {
	return &progress{out: w, terminal: isTerminal, now: time.Now}
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
	p.current, p.last, p.line = phase, now, text
	fmt.Fprint(p.out, "\r\033[K"+text)
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
