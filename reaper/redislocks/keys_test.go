package redislocks

import (
	"strings"
	"testing"

	"github.com/lock-reaper/lock-reaper/reaper/judge"
	"github.com/stretchr/testify/require"
)

func TestKeyIsTaskUUID(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in   string
		want bool
	}{
		{"0198a5c4-3f1e-7b2a-9c4d-5e6f7a8b9c0d", true},
		{"00000000-0000-0000-0000-000000000000", true},
		{"ffffffff-ffff-ffff-ffff-ffffffffffff", true},
		{"0198A5C4-3F1E-7B2A-9C4D-5E6F7A8B9C0D", false}, // not canonical: uppercase
		{"0198a5c43f1e7b2a9c4d5e6f7a8b9c0d", false},     // no dashes
		{"{0198a5c4-3f1e-7b2a-9c4d-5e6f7a8b9c0d}", false},
		{"urn:uuid:0198a5c4-3f1e-7b2a-9c4d-5e6f7a8b9c0d", false},
		{"0198a5c4-3f1e-7b2a-9c4d-5e6f7a8b9c0", false},   // 35
		{"0198a5c4-3f1e-7b2a-9c4d-5e6f7a8b9c0dd", false}, // 37
		{"0198a5c4_3f1e-7b2a-9c4d-5e6f7a8b9c0d", false},
		{"0198a5c4-3f1e-7b2a-9c4d5-e6f7a8b9c0d", false}, // dash misplaced
		{"0198a5c4-3f1e-7b2a-9c4d-5e6f7a8b9c0g", false},
		{"0198a5c4-3f1e-7b2a-9c4d-5e6f7a8b9c0 ", false},
		{"------------------------------------", false},
		{"", false},
	}
	for _, tc := range cases {
		require.Equal(t, tc.want, judge.IsTaskUUID(tc.in), "%q", tc.in)
	}
}

func TestKeyParseTaskKey(t *testing.T) {
	t.Parallel()
	const id = "0198a5c4-3f1e-7b2a-9c4d-5e6f7a8b9c0d"
	cases := []struct {
		key    string
		wantID string
		ok     bool
	}{
		{"task:" + id, id, true},
		{"task:" + strings.ToUpper(id), "", false},
		{"task:", "", false},
		{"task", "", false},
		{"", "", false},
		{id, "", false},
		{"TASK:" + id, "", false},
		{"task:" + id + ":extra", "", false},
		{"task::" + id, "", false},
		{" task:" + id, "", false},
		{"pulp:task:cancel:" + id, "", false}, // pulpcore's cancel signal, not a lock
		{"task:summary-cache-entry", "", false},
		{"task:" + id[:35], "", false},
		{"pulp:resource_lock:" + id, "", false},
	}
	for _, tc := range cases {
		got, ok := ParseTaskKey(tc.key)
		require.Equal(t, tc.ok, ok, "%q", tc.key)
		require.Equal(t, tc.wantID, got, "%q", tc.key)
		if ok {
			require.Equal(t, tc.key, judge.TaskKeyPrefix+got)
		}
	}
}

func TestKeyParseResourceKey(t *testing.T) {
	t.Parallel()
	cases := []struct {
		key  string
		want string
		ok   bool
	}{
		{"pulp:resource_lock:prn:rpm.rpmrepository:0198a5c4-3f1e-7b2a-9c4d-5e6f7a8b9c0d", "prn:rpm.rpmrepository:0198a5c4-3f1e-7b2a-9c4d-5e6f7a8b9c0d", true},
		{"pulp:resource_lock:prn:core.domain:0198a5c4-3f1e-7b2a-9c4d-5e6f7a8b9c0d", "prn:core.domain:0198a5c4-3f1e-7b2a-9c4d-5e6f7a8b9c0d", true},
		{"pulp:resource_lock:/pulp/api/v3/repositories/rpm/rpm/", "/pulp/api/v3/repositories/rpm/rpm/", true},
		{"pulp:resource_lock:shared:R", "shared:R", true}, // opaque: only the key prefix is cut
		{"pulp:resource_lock: ", " ", true},
		{"pulp:resource_lock::", ":", true},
		{"pulp:resource_lock:", "", false},
		{"pulp:resource_lock", "", false},
		{"pulp:resource_locks:R", "", false},
		{"PULP:RESOURCE_LOCK:R", "", false},
		{"task:R", "", false},
		{"", "", false},
	}
	for _, tc := range cases {
		got, ok := ParseResourceKey(tc.key)
		require.Equal(t, tc.ok, ok, "%q", tc.key)
		require.Equal(t, tc.want, got, "%q", tc.key)
		if ok {
			require.Equal(t, tc.key, judge.ResourceKeyPrefix+got)
		}
	}
}

func TestKeyOwnerProblem(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		owner string
		ok    bool
	}{
		{"pid@hostname", "1@pulp-worker-7d9f8b6c5-x2x4z", true},
		{"immediate task", "immediate-0198a5c4-3f1e-7b2a-9c4d-5e6f7a8b9c0d", true},
		{"spaces, colons, slashes", "worker 1: a/b@host", true},
		{"unicode", "1@wörker-αβγ-日本", true},
		{"emoji", "1@🐍", true},
		{"exactly 1024 bytes", strings.Repeat("a", MaxOwnerLen), true},
		{"1024 bytes of multibyte runes", strings.Repeat("é", MaxOwnerLen/2), true},
		{"empty", "", false},
		{"1025 bytes", strings.Repeat("a", MaxOwnerLen+1), false},
		{"invalid utf-8", "1@host\xff", false},
		{"truncated rune", "1@host\xc3", false},
		{"newline", "1@host\n", false},
		{"nul", "1@\x00host", false},
		{"tab", "1@\thost", false},
		{"del", "1@host\x7f", false},
		{"c1 control", "1@host\u0085", false},
		{"escape sequence", "\x1b[31mred", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			problem := OwnerProblem(tc.owner)
			if tc.ok {
				require.Empty(t, problem)
			} else {
				require.NotEmpty(t, problem)
			}
		})
	}
	require.Equal(t, "empty owner name", OwnerProblem(""))
	require.Equal(t, "owner name longer than 1024 bytes", OwnerProblem(strings.Repeat("x", 2000)))
	require.Equal(t, "owner name is not valid UTF-8", OwnerProblem("\xff"))
	require.Equal(t, "owner name contains control characters", OwnerProblem("a\nb"))
}

func TestKeyPrefixes(t *testing.T) {
	t.Parallel()
	// The names pulpcore writes, from pulp-protocol.md §1.
	require.Equal(t, "task:", judge.TaskKeyPrefix)
	require.Equal(t, "pulp:resource_lock:", judge.ResourceKeyPrefix)
	require.Equal(t, "pulp:owner_locks:", OwnerLocksPrefix)
	require.Equal(t, "pulp:active_owners", ActiveOwnersKey)
	require.Equal(t, "pulp:lock_reaper:suspects", SuspectsKey)
	// The reaper's own key and the stuck-claim suspect keys are no locks.
	_, isTask := ParseTaskKey(SuspectsKey)
	require.False(t, isTask)
	_, isRes := ParseResourceKey(SuspectsKey)
	require.False(t, isRes)
	k := judge.StuckClaimKey("0198a5c4-3f1e-7b2a-9c4d-5e6f7a8b9c0d", "x")
	_, isTask = ParseTaskKey(k.Key)
	require.False(t, isTask)
	_, isRes = ParseResourceKey(k.Key)
	require.False(t, isRes)
}

func TestKeyFinalStates(t *testing.T) {
	t.Parallel()
	for _, s := range []string{judge.StateCompleted, judge.StateFailed, judge.StateCanceled, judge.StateSkipped} {
		require.True(t, judge.Final(s), s)
	}
	for _, s := range []string{judge.StateWaiting, judge.StateRunning, judge.StateCanceling, "", "COMPLETED", "done"} {
		require.False(t, judge.Final(s), s)
	}
}
