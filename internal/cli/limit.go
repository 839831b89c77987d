package cli

import (
	"fmt"
	"io"
	"strconv"

	"github.com/spf13/pflag"
)

// terminalRows is how many rows a text table shows on a terminal unless
// --limit says otherwise; piped output is complete unless --limit says
// otherwise, so scripts see every row.
const terminalRows = 20

// limitValue is --limit, which means the same in every command: at most
// this many rows per text table, 0 for all; unset, terminalRows on a
// terminal and all when piped. JSON output is always complete.
type limitValue struct {
	n   int
	set bool
}

func (l *limitValue) String() string {
	if l == nil || !l.set {
		return ""
	}
	return strconv.Itoa(l.n)
}

func (l *limitValue) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return fmt.Errorf("want a number of rows, 0 for all")
	}
	l.n, l.set = n, true
	return nil
}

// Type is what pflag calls the value in help, unless the usage names it.
func (l *limitValue) Type() string { return "int" }

// limitFlag defines --limit on fs.
func limitFlag(fs *pflag.FlagSet) *limitValue {
	return limitFlagNoting(fs, "")
}

// limitFlagNoting defines --limit on fs, its help ending with note, which
// says what a command's tables hold beyond the limit's reach.
func limitFlagNoting(fs *pflag.FlagSet, note string) *limitValue {
	l := &limitValue{}
	fs.Var(l, "limit", fmt.Sprintf("text output: at most this many `rows` per table, 0 for no limit "+
		"(default: %d on a terminal, all when piped; --output json is always complete)%s", terminalRows, note))
	return l
}

// rows is the limit for output written to w: 0 means all.
func (l *limitValue) rows(w io.Writer) int {
	if l.set {
		return l.n
	}
	if isTerminal(w) {
		return terminalRows
	}
	return 0
}
