package cli

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestTableFromRowsProducedAgainPrintsAsAdded: a table whose rows are
// produced on each walk prints exactly what the same rows added print, on a
// terminal width (cutting, dropping columns) and piped, walking its rows a
// bounded number of times: it never holds them.
func TestTableFromRowsProducedAgainPrintsAsAdded(t *testing.T) {
	t.Parallel()
	rows := func(emit func(...cell)) {
		for i := range 50 {
			emit(keyCell(fmt.Sprintf("pulp:resource_lock:prn:rpm.rpmrepository:%036d", i)), textCell("exclusive"),
				keyCell(fmt.Sprintf("1@pulp-worker-%d", i%7)), freeCell(strings.Repeat("evidence ", i%5+1)))
		}
	}
	for _, l := range []layout{{}, {width: 80}, {width: 60, color: true}} {
		added := &table{indent: "  ", header: []string{"KEY", "KIND", "OWNER", "EVIDENCE"}, drop: []int{3, 1}}
		rows(func(cells ...cell) { added.add(cells...) })
		walks := 0
		produced := &table{indent: "  ", header: []string{"KEY", "KIND", "OWNER", "EVIDENCE"}, drop: []int{3, 1},
			each: func(emit func(...cell)) { walks++; rows(emit) }}
		var want, got strings.Builder
		added.write(&want, l)
		produced.write(&got, l)
		require.Equal(t, want.String(), got.String(), "width %d", l.width)
		// Two walks a layout: one per column dropped to fit, and the last.
		require.LessOrEqual(t, walks, 2*(1+len(produced.drop)), "width %d", l.width)
		require.Equal(t, 51, strings.Count(got.String(), "\n"))
	}
}
