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

	"github.com/lock-reaper/lock-reaper/reaper/judge"
)

// layout is how text output is laid out for where it goes. On a terminal:
// tables fit its width, findings are grouped by owner and verdict, rows are
// limited, verdicts coloured. Piped: one complete row per finding or
// holding, never cut, never coloured, so scripts get the same complete text
// every time. Either way the rows come most severe first (textorder.go).
type layout struct {
	width   int  // columns to fit; 0: no limit
	color   bool // ANSI colours on verdicts
	grouped bool // findings grouped by owner and verdict, most severe first
	limit   int  // rows per table; 0: all
	// heading, when set, starts a pass's report instead of the words of its
	// mode: release --dry-run reports in audit's mode but is not an audit.
	heading string
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

// severityOf ranks a verdict among judge.Verdicts, 0 the most severe; a
// verdict the catalogue does not know ranks among those that need a look.
func severityOf(v judge.Verdict) int {
	if i := slices.Index(judge.Verdicts, v); i >= 0 {
		return i
	}
	return 6
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
func verdictColor(v judge.Verdict) string {
	switch v {
	case judge.VerdictTaskLost, judge.VerdictLost, judge.VerdictOwnerDead:
		return ansiRed
	case judge.VerdictJustified, judge.VerdictHealthy:
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

// cell is one table cell: its text and its colour.
// No cell is ever shortened: an on-call engineer copies keys, owners and
// task ids from these tables, and a cut one names nothing.
type cell struct {
	text  string
	color string
}

// table prints rows with columns two spaces apart, as text/tabwriter would.
// When a width is set and the rows are wider, the least needed columns are
// left out (drop); when that is not enough, every row is stacked instead:
// its first cell on a line of its own, then one line per other cell under
// its column's name, so that nothing is cut. indent starts every line.
type table struct {
	indent string
	header []string
	// labels name the columns of a table without a header when its rows
	// are stacked.
	labels []string
	rows   [][]cell
	// each, when set, produces the rows instead of rows: once per walk of
	// the table (two per layout tried), so that the
	// hundreds of thousands of findings of an incident are never held.
	each func(emit func(cells ...cell))
	// drop lists the columns, least needed first, left out when the table
	// is too wide.
	drop    []int
	dropped []int
}

func (t *table) add(cells ...cell) { t.rows = append(t.rows, cells) }

// textCell, keyCell (a key, owner or task id) and freeCell (prose) are laid
// out alike: none is ever cut; the names say what the column holds.
func textCell(s string) cell        { return cell{text: s} }
func keyCell(s string) cell         { return cell{text: s} }
func freeCell(s string) cell        { return cell{text: s} }
func (c cell) in(color string) cell { c.color = color; return c }

func (t *table) write(w io.Writer, l layout) {
	bw := bufio.NewWriterSize(w, 64<<10)
	defer func() { _ = bw.Flush() }()
	if l.width == 0 {
		t.render(bw, l, 0)
		return
	}
	// In full; else leaving out the least needed columns; else hanging the
	// rows whose first cell is too long for its column, with as few
	// columns left out as that needs; else stacking every row.
	widths := t.measure()
	kept := len(t.dropped)
	dropTo := func(level int) {
		t.dropped = t.dropped[:kept]
		for _, col := range t.drop[:level] {
			t.remove(col)
		}
	}
	for level := 0; level <= len(t.drop); level++ {
		dropTo(level)
		if t.lineWidth(widths, t.columns()) <= l.width {
			t.render(bw, l, 0)
			return
		}
	}
	for level := 0; level <= len(t.drop); level++ {
		dropTo(level)
		if first := t.hangingWidth(widths, l.width); first > 0 {
			t.render(bw, l, first)
			return
		}
	}
	dropTo(0)
	t.stack(bw, l)
}

// measure walks the rows once for the width of every column, header included.
func (t *table) measure() []int {
	var widths []int
	grow := func(i, n int) {
		for len(widths) <= i {
			widths = append(widths, 0)
		}
		widths[i] = max(widths[i], n)
	}
	for i, h := range t.header {
		grow(i, runeLen(h))
	}
	t.forRows(func(r []cell) {
		for i, c := range r {
			grow(i, runeLen(c.text))
		}
	})
	return widths
}

// lineWidth is the widest line of the columns cols in full: every column
// but the last is padded to its widest cell.
func (t *table) lineWidth(widths, cols []int) int {
	n := runeLen(t.indent)
	for k, i := range cols {
		if i < len(widths) {
			n += widths[i]
		}
		if k > 0 {
			n += tablePadding
		}
	}
	return n
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

// minHanging is the narrowest first column hanging rows leave: narrower,
// nearly every row would hang, and stacked rows read better.
const minHanging = 16

// hangingWidth is the width left to the first column when the other
// columns take all they need of width: rows whose first cell is wider hang
// (that cell alone on a line, the rest of the row on the next under its
// columns). 0 when that leaves less than minHanging, or the table has one
// column.
func (t *table) hangingWidth(widths []int, width int) int {
	cols := t.columns()
	if len(cols) < 2 {
		return 0
	}
	first := width - t.lineWidth(widths, cols[1:]) - tablePadding
	if first < minHanging {
		return 0
	}
	return first
}

// render lays the table out in two walks of its rows: one measures the
// columns, the other prints them line by line. With first > 0, the first
// column is at most first wide, and a row whose first cell is wider hangs:
// that cell alone on its line, the row's other cells on the next line
// under their columns.
func (t *table) render(w io.Writer, l layout, first int) {
	if len(t.rows) == 0 && t.each == nil && t.header == nil {
		return
	}
	cols := t.columns()
	widths := make([]int, len(cols))
	for n, i := range cols {
		if i < len(t.header) {
			widths[n] = runeLen(t.header[i])
		}
	}
	rows := 0
	t.forRows(func(r []cell) {
		rows++
		for n, i := range cols {
			if c := runeLen(r[i].text); n > 0 || first == 0 || c <= first {
				widths[n] = max(widths[n], c)
			}
		}
	})
	if rows == 0 && t.header == nil {
		return
	}
	var row strings.Builder
	line := func(text func(i int) (string, string)) {
		row.Reset()
		row.WriteString(t.indent)
		for n, i := range cols {
			s, color := text(i)
			if n == 0 && len(cols) > 1 && runeLen(s) > widths[0] {
				row.WriteString(l.paint(s, color) + "\n" + t.indent + strings.Repeat(" ", widths[0]+tablePadding))
				continue
			}
			pad := ""
			if n < len(cols)-1 {
				pad = strings.Repeat(" ", widths[n]-runeLen(s)+tablePadding)
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

// stack prints each row as a record: the first cell (the key, the owner,
// the task) in full on a line of its own, then each other non-empty cell on
// a line of its own after its column's name in lower case. A value wraps
// at spaces to the width; an identifier is never broken, even when it alone
// is wider than the terminal.
func (t *table) stack(w io.Writer, l layout) {
	names := t.header
	if names == nil {
		names = t.labels
	}
	label := func(i int) string {
		if i < len(names) {
			return strings.ToLower(names[i])
		}
		return ""
	}
	cols := t.columns()
	if len(cols) == 0 {
		return
	}
	labelWidth := 0
	for _, i := range cols[1:] {
		labelWidth = max(labelWidth, runeLen(label(i)))
	}
	inner := t.indent + "    "
	valueIndent := inner + strings.Repeat(" ", labelWidth+tablePadding)
	t.forRows(func(r []cell) {
		first := r[cols[0]]
		_, _ = io.WriteString(w, t.indent+l.paint(first.text, first.color)+"\n")
		for _, i := range cols[1:] {
			c := r[i]
			if c.text == "" {
				continue
			}
			head := inner + label(i) + strings.Repeat(" ", labelWidth-runeLen(label(i))+tablePadding)
			if runeLen(valueIndent+c.text) <= l.width {
				_, _ = io.WriteString(w, head+l.paint(c.text, c.color)+"\n")
				continue
			}
			wrapped := wrapText(c.text, valueIndent, l.width)
			_, _ = io.WriteString(w, head+strings.TrimPrefix(wrapped, valueIndent))
		}
	})
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
