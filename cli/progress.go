package cli

import (
	"fmt"
	"io"
	"sync"
	"time"
)

// progress shows, on a terminal only, how many lock keys a long pass has
// read. On a non-terminal (a CronJob's log) it prints nothing.
type progress struct {
	mu    sync.Mutex
	w     io.Writer
	last  time.Time
	shown bool
}

func newProgress(w io.Writer, logFormat string) *progress {
	if !isTerminal(w) || logFormat == "json" {
		return &progress{}
	}
	return &progress{w: w}
}

// keys is called by the reaper after each batch it reads.
func (p *progress) keys(n int) {
	if p == nil || p.w == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if time.Since(p.last) < 200*time.Millisecond {
		return
	}
	p.last = time.Now()
	p.shown = true
	fmt.Fprintf(p.w, "\rread %d lock keys…", n)
}

// done clears the progress line.
func (p *progress) done() {
	if p == nil || p.w == nil || !p.shown {
		return
	}
	fmt.Fprint(p.w, "\r\033[K")
}
