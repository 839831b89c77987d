package status

import (
	"fmt"
	"github.com/lock-reaper/lock-reaper/internal/humantext"
	"strings"
	"time"

	"github.com/lock-reaper/lock-reaper/reaper"
	"github.com/lock-reaper/lock-reaper/reaper/history"
)

// quietAfter is how long without a recorded pass makes the pages say that
// no reaper has passed: a CronJob every few minutes or a daemon each minute
// is far inside it.
const quietAfter = time.Hour

// LastPass is the newest pass of any reaper the history holds; nil if none.
func (v *View) LastPass() *history.Entry {
	if len(v.Passes) == 0 {
		return nil
	}
	return &v.Passes[0]
}

// Quiet says no reaper has recorded a pass within quietAfter of the read:
// the pages then say so instead of promising one.
func (v *View) Quiet() bool {
	p := v.LastPass()
	return v.PassesError == "" && (p == nil || v.PassesRead.Sub(p.At) > quietAfter)
}

// LastPassWords says when a reaper last passed and what it did, for a page
// that releases nothing itself (`lock-reaper status`): "a once (CronJob)
// pass at … released 1,067 holdings", or "no reaper has passed in 3 h".
func (v *View) LastPassWords() string {
	p := v.LastPass()
	switch {
	case v.PassesError != "":
		return "the history of passes could not be read: " + v.PassesError
	case p == nil:
		return "no reaper has recorded a pass in the last " + humantext.Duration(passesWindow)
	}
	what := passWords(*p)
	if ago := v.PassesRead.Sub(p.At); ago > quietAfter {
		return fmt.Sprintf("no reaper has passed in %s (the last, %s)", humantext.Duration(ago), what)
	}
	return what
}

// passWords is one pass in a sentence. Every word of an entry goes through visible (or short): anyone who may
// write under the reaper's prefix may write the history, control
// characters included, and the sentence reaches the page and its titles.
func passWords(p history.Entry) string {
	s := fmt.Sprintf("%s at %s", modeWords(p.Mode), clock(p.At))
	if p.Error != "" {
		return s + " failed: " + short(p.Error, passErrorWords)
	}
	s += fmt.Sprintf(" released %s and updated %s", plural(p.Released, "holding"), plural(p.Updated, "task"))
	if len(p.Guards) > 0 {
		guards := make([]string, len(p.Guards))
		for i, g := range p.Guards {
			guards[i] = short(g, 60)
		}
		s += " (held back by " + strings.Join(guards, ", ") + ")"
	}
	return s
}

// passErrorWords is how much of a pass's error a sentence about it quotes;
// the passes page has more.
const passErrorWords = 200

// modeWords names what ran a pass.
func modeWords(mode string) string {
	switch mode {
	case "once":
		return "a once (CronJob) pass"
	case "run":
		return "a pass of run (the daemon)"
	case "release":
		return "a release --owner"
	}
	return "a " + short(mode, 40) + " pass"
}

// releaseCommand is what an engineer runs to end a block by hand.
func releaseCommand(owner string) string {
	return "lock-reaper release --owner " + shellWord(owner) + " --dry-run"
}

// shellWord quotes an owner name for a shell when it needs it.
func shellWord(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r == '@' || r == '-' || r == '_' || r == '.' || r == ':' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// ReadOnly says the view is of a read-only inspection (`lock-reaper
// status`, whose report is an audit's): nothing this process runs releases
// anything, so the pages promise no pass.
func (v *View) ReadOnly() bool {
	return v.Report == nil || v.Report.Mode == reaper.ModeAudit
}
