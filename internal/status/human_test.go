package status

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/lock-reaper/lock-reaper/reaper/judge"
)

func TestHumanAges(t *testing.T) {
	now := time.Date(2026, 7, 24, 12, 0, 0, 0, time.UTC)
	assert.Equal(t, "23 h ago", humanAgo(now, now.Add(-23*time.Hour)))
	assert.Equal(t, "in 1 min", humanAgo(now, now.Add(time.Minute)))
	assert.Equal(t, "-", humanAgo(now, time.Time{}))
	d := judge.Duration(90 * time.Second)
	assert.Equal(t, "1 min 30 s", durationText(&d))
	assert.Equal(t, "-", durationText(nil))
}

func TestPluralsAndNumbers(t *testing.T) {
	for _, tc := range []struct {
		got, want string
	}{
		{plural(1, "pass", "passes"), "1 pass"},
		{plural(0, "pass", "passes"), "0 passes"},
		{plural(2, "pass", "passes"), "2 passes"},
		{plural(1, "holding"), "1 holding"},
		{plural(1067, "holding"), "1,067 holdings"},
		{plural(1, "waiting task"), "1 waiting task"},
		{num(0), "0"},
		{num(999), "999"},
		{num(1000), "1,000"},
		{num(1234567), "1,234,567"},
		{num(-1067), "-1,067"},
	} {
		assert.Equal(t, tc.want, tc.got)
	}
}

// TestNoDuplicatedPrefix: the task page shows the status beside the
// conclusion, so a conclusion that starts with it loses it there.
func TestNoDuplicatedPrefix(t *testing.T) {
	for _, tc := range []struct{ status, conclusion, want string }{
		{"lost", "lost: claimed by dead worker 1@w; the next pass cancels it", "claimed by dead worker 1@w; the next pass cancels it"},
		{"not-found", "not found: no task 0f", "no task 0f"},
		{"orphaned", "orphaned: claimed by x", "claimed by x"},
		{"blocked", "blocked by a stale lock of dead worker 1@w", "blocked by a stale lock of dead worker 1@w"},
		{"ready", "ready to run: nothing holds its resources", "ready to run: nothing holds its resources"},
	} {
		assert.Equal(t, tc.want, conclusionAfter(tc.status, tc.conclusion))
	}
}

// TestTones: every verdict and liveness has a tone class, and
// the templates always print the word inside the coloured pill.
func TestTones(t *testing.T) {
	for _, v := range judge.Verdicts {
		assert.Contains(t, []string{"ok", "info", "warn", "bad"}, tone(v), v.String())
	}
	assert.Equal(t, "bad", tone(judge.VerdictOwnerDead))
	assert.Equal(t, "ok", tone(judge.VerdictHealthy))
	assert.Equal(t, "warn", tone(judge.VerdictNoTask))
	assert.Equal(t, "warn", tone(judge.VerdictClaimedNotStarted), "reported, never written")
	assert.Equal(t, "ok", livenessTone("alive"))
	assert.Equal(t, "warn", livenessTone("late"))
	assert.Equal(t, "bad", livenessTone("dead"))
}
