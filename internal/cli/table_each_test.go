package cli

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestTableFromRowsProducedAgainPrintsAsAdded: a table whose rows are
// produced on each walk prints exactly what the same rows added print, on a
// terminal width (dropping columns, hanging or stacking rows) and piped, walking its rows a
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
		// One walk to measure, two to lay out.
		require.LessOrEqual(t, walks, 3, "width %d", l.width)
		if l.width == 0 {
			require.Equal(t, 51, strings.Count(got.String(), "\n"))
		}
		requireFitsWidth(t, fmt.Sprint(l.width), stripANSI(got.String()), l.width)
	}
}
