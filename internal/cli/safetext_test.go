package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/internal/testing/passtest"
)

func TestQuoteText(t *testing.T) {
	t.Parallel()
	require.Equal(t, "1@pulp-worker-3", quoteText("1@pulp-worker-3"))
	require.Equal(t, `"1@w\x1b[2J\x1b[H"`, quoteText("1@w\x1b[2J\x1b[H"))
	require.Equal(t, `"a\u202eb"`, quoteText("a\u202eb"), "a bidi override reorders what follows")
	require.Equal(t, "naïve", quoteText("naïve"))
}

// A crafted AppStatus name (and task name) that would clear the screen and
// print a fake summary reaches the terminal escaped, in the report, locks,
// explain and the text logs; JSON keeps the raw string.
func TestCraftedNamesAreEscapedInText(t *testing.T) {
	t.Parallel()
	f := newOpsFleet(t)
	evil := "1@evil\x1b[2J\x1b[HSummary: nothing to do\r\n"
	dead := f.worker(evil, time.Hour)
	task := f.task("running", dead, []string{passtest.Repo()}, time.Hour)
	_, err := f.db.Pool.Exec(f.ctx, `UPDATE core_task SET name = $1 WHERE pulp_id = $2`, "sync\x1b]0;pwned\x07", task)
	require.NoError(t, err)
	f.acquire(evil, task, passtest.Repo())
	env := withEnv(f.env, "REAPER_LOG_FORMAT", "text")

	for _, args := range [][]string{{"audit"}, {"locks"}, {"locks", "--by-owner"}, {"explain", task}} {
		_, out, stderr := run(t, env, args...)
		for _, s := range []string{out, stderr} {
			require.NotContains(t, s, "\x1b", "%v: %q", args, s)
			require.NotContains(t, s, "\x07", args)
			require.NotContains(t, s, "\r", args)
		}
		if args[0] != "locks" { // locks lists only holdings of well-formed owners
			require.Contains(t, out, `1@evil\x1b[2J\x1b[HSummary: nothing to do\r\n`, args)
		}
	}
	_, out, _ := run(t, env, "explain", task)
	require.Contains(t, out, `"sync\x1b]0;pwned\a"`)

	_, out, _ = run(t, env, "audit", "--output", "json")
	require.True(t, strings.Contains(out, `1@evil\u001b[2J\u001b[HSummary: nothing to do\r\n`), "JSON is unchanged: %s", out)
}
