package cli

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"text/tabwriter"

	"github.com/stretchr/testify/require"
)

// TestTableAlignsAsTabwriter: writeTable prints what text/tabwriter printed
// for the same rows, wide characters and empty cells included.
func TestTableAlignsAsTabwriter(t *testing.T) {
	t.Parallel()
	rows := [][]string{
		{"  KEY", "KIND", "OWNER", "EVIDENCE"},
		{"  task:a", "task", "1@w", "owner dead; task running"},
		{"  pulp:resource_lock:prn:rpm.repository:…", "exclusive", "", "via task:a"},
		{"  task:é", "", "12@worker-ü", ""},
	}
	var want bytes.Buffer
	tw := tabwriter.NewWriter(&want, 0, 0, 2, ' ', 0)
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	require.NoError(t, tw.Flush())
	var got bytes.Buffer
	require.NoError(t, writeTable(&got, func(emit func(...string)) {
		for _, r := range rows {
			emit(r...)
		}
	}))
	require.Equal(t, want.String(), got.String())
}
