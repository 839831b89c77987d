package cli

import (
	"bufio"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/term"

	"github.com/lock-reaper/lock-reaper/reaper"
)

// layout is how text output is laid out for where it goes. On a terminal:
// tables fit its width, findings are grouped by owner and verdict, rows are
// limited, verdicts coloured. Piped: every row, in the report's order, never
// cut, never coloured, so scripts get the same complete text every time.
type layout struct {
	width   int  // columns to fit; 0: no limit
	color   bool // ANSI colours on verdicts
	grouped bool // findings grouped by owner and verdict, most severe first
	limit   int  // rows per table; 0: all
}

// minWidth is the narrowest layout: below it tables still print, just
// wider than the terminal.
const minWidth = 40

// layoutFor picks the layout of output written to w. lookup reads the
// environment (NO_COLOR, TERM).
func layoutFor(w io.Writer, lookup func(string) (string, bool), limit *limitValue) layout {
	l := layout{limit: limit.rows(w)}
	f, ok := w.(interface{ Fd() uintptr })
	if !ok || !isTerminal(w) {
		return l
	}
	l.grouped = true
	if cols, _, err := term.GetSize(int(f.Fd())); err == nil && cols > 0 {
		l.width = max(cols, minWidth)
	} else {
		l.width = 80
	}
	noColor, _ := lookup("NO_COLOR")
	termName, _ := lookup("TERM")
	l.color = noColor == "" && termName != "dumb"
	return l
}

// envLookup is os.LookupEnv unless the command's environment says otherwise.
func envLookup(env Env) func(string) (string, bool) {
	if env.LookupEnv != nil {
		return env.LookupEnv
	}
	return os.LookupEnv
}

// severity ranks verdicts, most severe first: a dead owner's running task
// and a lost task block work now; a finished task's leftover lock only
// waits for its release.
var severity = map[reaper.Verdict]int{
	reaper.VerdictTaskLost: 0, reaper.VerdictLost: 0, reaper.VerdictOwnerDead: 1, reaper.VerdictOwnerGone: 2,
	reaper.VerdictTaskMissing: 3, reaper.VerdictUnclaimed: 4, reaper.VerdictNoTask: 5,
	reaper.VerdictOrphanedClaim: 6, reaper.VerdictStuckClaim: 7, reaper.VerdictTaskFinished: 8,
	reaper.VerdictPending: 9, reaper.VerdictJustified: 10, reaper.VerdictHealthy: 11,
}

func severityOf(v reaper.Verdict) int {
	if s, ok := severity[v]; ok {
		return s
	}
	return 5 // a verdict added later sorts among the ones that need a look
}

const (
	ansiRed    = "\x1b[31m"
	ansiYellow = "\x1b[33m"
	ansiGreen  = "\x1b[32m"
	ansiBold   = "\x1b[1m"
	ansiReset  = "\x1b[0m"
)

// verdictColor is red for what blocks work now, yellow for leftovers and
// suspects, green for what is kept.
func verdictColor(v reaper.Verdict) string {
	switch s := severityOf(v); {
	case s <= 1:
		return ansiRed
	case s >= 10:
		return ansiGreen
	default:
		return ansiYellow
	}
}

// paint colours text on a colour layout.
func (l layout) paint(text, color string) string {
	if !l.color || color == "" || text == "" {
		return text
	}
	return color + text + ansiReset
}

// cell is one table cell: its text, how it may be cut, and its colour.
type cell struct {
	text  string
	cut   cutMode
	color string
}

type cutMode uint8

const (
	cutNever  cutMode = iota
	cutMiddle         // keys: both ends say most (prefix and id)
	cutEnd            // free text
)

// table prints rows with columns two spaces apart, as text/tabwriter would,
// shrunk to width (when not 0) by cutting the cuttable columns: the widest
// first, never below a few characters. indent starts every line.
type table struct {
	indent string
	header []string
	rows   [][]cell
	// each, when set, produces the rows instead of rows: once per walk of
	// the table (two per layout tried), so that the
	// hundreds of thousands of findings of an incident are never held.
	each func(emit func(cells ...cell))
	// drop lists the columns, least needed first, left out when cutting
	// alone cannot make the table fit.
	drop      []int
	dropped   []int
	noKeyCuts bool
}

func (t *table) add(cells ...cell) { t.rows = append(t.rows, cells) }

func textCell(s string) cell        { return cell{text: s} }
func keyCell(s string) cell         { return cell{text: s, cut: cutMiddle} }
func freeCell(s string) cell        { return cell{text: s, cut: cutEnd} }
func (c cell) in(color string) cell { c.color = color; return c }

// minCut is the narrowest a cuttable column is made: keys keep enough to
// tell them apart, free text enough to start reading.
func minCut(mode cutMode) int {
	if mode == cutEnd {
		return 8
	}
	return 12
}

func (t *table) write(w io.Writer, l layout) {
	for _, col := range t.drop {
		if l.width == 0 || t.fits(l.width) {
			break
		}
		t.remove(col)
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	t.render(bw, l)
	_ = bw.Flush()
}

// remove leaves column col out.
func (t *table) remove(col int) {
	if !slices.Contains(t.dropped, col) {
		t.dropped = append(t.dropped, col)
	}
}

// forRows calls f with each row, as added or as each produces them.
func (t *table) forRows(f func([]cell)) {
	if t.each != nil {
		t.each(func(cells ...cell) { f(cells) })
		return
	}
	for _, r := range t.rows {
		f(r)
	}
}

// columns lists the columns printed: those not dropped, by their index in
// the rows as added.
func (t *table) columns() []int {
	n := len(t.header)
	if t.header == nil {
		t.forRows(func(r []cell) { n = max(n, len(r)) })
	}
	var cols []int
	for i := range n {
		if !slices.Contains(t.dropped, i) {
			cols = append(cols, i)
		}
	}
	return cols
}

// fits says whether the table fits width with only its free text cut:
// a column is dropped before a key is cut. The table is laid out, not kept.
func (t *table) fits(width int) bool {
	keep := *t
	keep.noKeyCuts = true
	var m lineMeter
	keep.render(&m, layout{width: width})
	return m.widest <= width
}

// lineMeter is a writer that keeps only the rune length of its widest line.
type lineMeter struct{ line, widest int }

func (m *lineMeter) Write(p []byte) (int, error) {
	for _, r := range string(p) {
		if r == '\n' {
			m.line = 0
			continue
		}
		m.line++
		m.widest = max(m.widest, m.line)
	}
	return len(p), nil
}

// render lays the table out in two walks of its rows: one measures the
// columns, the other prints them line by line.
func (t *table) render(w io.Writer, l layout) {
	if len(t.rows) == 0 && t.each == nil && t.header == nil {
		return
	}
	cols := t.columns()
	widths := make([]int, len(cols))
	cuttable := make([]bool, len(cols))
	// A column is cut as its first cuttable cell says.
	modes := make([]cutMode, len(cols))
	for n, i := range cols {
		if i < len(t.header) {
			widths[n] = runeLen(t.header[i])
		}
	}
	rows := 0
	t.forRows(func(r []cell) {
		rows++
		for n, i := range cols {
			c := r[i]
			widths[n] = max(widths[n], runeLen(c.text))
			if c.cut != cutNever && !cuttable[n] {
				cuttable[n], modes[n] = true, c.cut
			}
		}
	})
	if rows == 0 && t.header == nil {
		return
	}
	if l.width > 0 {
		if t.noKeyCuts {
			for n := range modes {
				if modes[n] == cutMiddle {
					cuttable[n] = false
				}
			}
		}
		fitWidths(widths, cuttable, modes, l.width-runeLen(t.indent))
	}
	var row strings.Builder
	line := func(text func(i int) (string, string)) {
		row.Reset()
		row.WriteString(t.indent)
		for n, i := range cols {
			s, color := text(i)
			s = fitCell(s, widths[n], modes[n])
			pad := ""
			if n < len(cols)-1 {
				pad = strings.Repeat(" ", widths[n]-runeLen(s)+2)
			}
			row.WriteString(l.paint(s, color) + pad)
		}
		// An empty last cell leaves the padding of the one before.
		_, _ = io.WriteString(w, strings.TrimRight(row.String(), " ")+"\n")
	}
	if t.header != nil {
		line(func(i int) (string, string) { return t.header[i], "" })
	}
	t.forRows(func(r []cell) {
		line(func(i int) (string, string) { return r[i].text, r[i].color })
	})
}

// fitWidths narrows the cuttable columns until the row fits avail: free
// text first, then keys, the widest of each first, one rune at a time,
// never below minCut.
func fitWidths(widths []int, cuttable []bool, modes []cutMode, avail int) {
	total := 2 * (len(widths) - 1)
	for _, w := range widths {
		total += w
	}
	for _, mode := range []cutMode{cutEnd, cutMiddle} {
		for total > avail {
			widest := -1
			for i, w := range widths {
				if cuttable[i] && modes[i] == mode && w > minCut(mode) && (widest < 0 || w > widths[widest]) {
					widest = i
				}
			}
			if widest < 0 {
				break
			}
			widths[widest]--
			total--
		}
	}
}

// fitCell cuts s to width runes: in the middle for keys, at the end for
// free text, marking the cut with an ellipsis.
func fitCell(s string, width int, mode cutMode) string {
	n := runeLen(s)
	if n <= width || mode == cutNever {
		return s
	}
	r := []rune(s)
	if mode == cutEnd {
		return string(r[:width-1]) + "…"
	}
	head := (width - 1) / 2
	tail := width - 1 - head
	return string(r[:head]) + "…" + string(r[n-tail:])
}

func runeLen(s string) int { return utf8.RuneCountInString(s) }

// line prints one line of prose, wrapped to the layout's width.
func (l layout) line(w io.Writer, indent, text string) {
	if l.width == 0 || runeLen(indent+text) <= l.width {
		_, _ = io.WriteString(w, indent+text+"\n")
		return
	}
	_, _ = io.WriteString(w, wrapText(text, indent, l.width))
}

// moreLine says how many rows a limited table left out and how to see them.
func moreLine(w io.Writer, indent string, rest int) {
	if rest > 0 {
		_, _ = io.WriteString(w, indent+"… and "+strconv.Itoa(rest)+" more (--limit 0 shows all, --output json gives everything)\n")
	}
}
