package cli

import (
	"bufio"
	"io"
	"strings"
	"unicode/utf8"
)

// tablePadding is the space between columns, as the text tables have always
// had it (text/tabwriter's padding 2).
const tablePadding = 2

// tableRows produces a table's rows, the header first, by calling emit once
// per row. It is called twice and must produce the same rows each time.
type tableRows func(emit func(cells ...string))

// writeTable prints rows in columns aligned as text/tabwriter aligns them
// (every cell but a row's last padded with spaces to the widest cell of its
// column plus tablePadding) without keeping the rows: they are produced once
// to measure the columns and once to print them. tabwriter keeps every cell
// until it is flushed, which for the findings of an incident (hundreds of
// thousands of rows) is hundreds of megabytes.
func writeTable(w io.Writer, rows tableRows) error {
	var widths []int
	rows(func(cells ...string) {
		for i, c := range cells[:max(len(cells)-1, 0)] {
			if i == len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], utf8.RuneCountInString(c))
		}
	})
	bw := bufio.NewWriterSize(w, 64<<10)
	rows(func(cells ...string) {
		for i, c := range cells {
			bw.WriteString(c)
			if i < len(cells)-1 {
				bw.WriteString(strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c)+tablePadding))
			}
		}
		bw.WriteByte('\n')
	})
	return bw.Flush()
}
