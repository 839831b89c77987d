package redislocks

import (
	"regexp"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/lock-reaper/lock-reaper/reaper/judge"
)

// fzCanonicalTaskKey is pulp-protocol.md's task key: "task:" and the canonical
// lowercase UUID text, written out independently of IsTaskUUID.
var fzCanonicalTaskKey = regexp.MustCompile(`^task:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

func FuzzParseTaskKey(f *testing.F) {
	for _, seed := range []string{
		"task:0198a5c4-3f1e-7b2a-9c4d-5e6f7a8b9c0d",
		"task:00000000-0000-0000-0000-000000000000",
		"task:0198A5C4-3F1E-7B2A-9C4D-5E6F7A8B9C0D",
		"task:0198a5c43f1e7b2a9c4d5e6f7a8b9c0d",
		"task:",
		"task",
		"",
		"pulp:task:cancel:0198a5c4-3f1e-7b2a-9c4d-5e6f7a8b9c0d",
		"task:0198a5c4-3f1e-7b2a-9c4d-5e6f7a8b9c0d\n",
		"task:0198a5c4-3f1e-7b2a-9c4d-5e6f7a8b9c0\xff",
		"task:------------------------------------",
		"task:summary",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, key string) {
		id, ok := ParseTaskKey(key)
		if ok != fzCanonicalTaskKey.MatchString(key) {
			t.Fatalf("ParseTaskKey(%q) ok=%v, want %v", key, ok, !ok)
		}
		if !ok {
			if id != "" {
				t.Fatalf("ParseTaskKey(%q) refused the key but returned %q", key, id)
			}
			return
		}
		// Accepted keys round-trip.
		if judge.TaskKeyPrefix+id != key {
			t.Fatalf("ParseTaskKey(%q) = %q does not round-trip", key, id)
		}
		if again, ok := ParseTaskKey(judge.TaskKeyPrefix + id); !ok || again != id {
			t.Fatalf("ParseTaskKey(task:%s) = %q, %v", id, again, ok)
		}
		if !judge.IsTaskUUID(id) || id != strings.ToLower(id) {
			t.Fatalf("ParseTaskKey(%q) returned non-canonical id %q", key, id)
		}
		// The same id names the task of an immediate-<uuid> owner.
		if got, ok := judge.ImmediateTaskID("immediate-" + id); !ok || got != id {
			t.Fatalf("immediateTaskID(immediate-%s) = %q, %v", id, got, ok)
		}
	})
}

func FuzzParseResourceKey(f *testing.F) {
	for _, seed := range []string{
		"pulp:resource_lock:prn:core.domain:0198a5c4-3f1e-7b2a-9c4d-5e6f7a8b9c0d",
		"pulp:resource_lock:/pulp/api/v3/repositories/rpm/rpm/",
		"pulp:resource_lock:",
		"pulp:resource_lock",
		"task:0198a5c4-3f1e-7b2a-9c4d-5e6f7a8b9c0d",
		"",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, key string) {
		r, ok := ParseResourceKey(key)
		want := strings.HasPrefix(key, judge.ResourceKeyPrefix) && len(key) > len(judge.ResourceKeyPrefix)
		if ok != want {
			t.Fatalf("ParseResourceKey(%q) ok=%v, want %v", key, ok, want)
		}
		if ok && judge.ResourceKeyPrefix+r != key {
			t.Fatalf("ParseResourceKey(%q) = %q does not round-trip", key, r)
		}
		if !ok && r != "" {
			t.Fatalf("ParseResourceKey(%q) refused the key but returned %q", key, r)
		}
	})
}

func FuzzOwnerProblem(f *testing.F) {
	for _, seed := range []string{
		"",
		"1@pulp-worker-7d9f8b6c5-x2x4z",
		"immediate-0198a5c4-3f1e-7b2a-9c4d-5e6f7a8b9c0d",
		"1@wörker-日本",
		"1@host\n",
		"1@host\x00",
		"1@host\xff",
		"\u0085",
		"\u2028",
		strings.Repeat("a", MaxOwnerLen),
		strings.Repeat("a", MaxOwnerLen+1),
	} {
		f.Add(seed)
	}
	if OwnerProblem("") == "" {
		f.Fatal(`OwnerProblem("") accepted the empty name`)
	}
	f.Fuzz(func(t *testing.T, v string) {
		problem := OwnerProblem(v)
		if problem != OwnerProblem(v) {
			t.Fatalf("OwnerProblem(%q) is not deterministic", v)
		}
		valid := v != "" && len(v) <= MaxOwnerLen && utf8.ValidString(v) &&
			strings.IndexFunc(v, unicode.IsControl) < 0
		if valid != (problem == "") {
			t.Fatalf("OwnerProblem(%q) = %q, valid by the rules: %v", v, problem, valid)
		}
	})
}
