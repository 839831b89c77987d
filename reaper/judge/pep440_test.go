package judge

import (
	"slices"
	"testing"
)

// packagingOrder is packaging's documented ordering example (the
// "Version" section of its docs and PEP 440's "Summary of permitted
// suffixes and relative ordering"), lowest first.
var packagingOrder = []string{
	"1.0.dev456",
	"1.0a1",
	"1.0a2.dev456",
	"1.0a12.dev456",
	"1.0a12",
	"1.0b1.dev456",
	"1.0b2",
	"1.0b2.post345.dev456",
	"1.0b2.post345",
	"1.0rc1.dev456",
	"1.0rc1",
	"1.0",
	"1.0+abc.5",
	"1.0+abc.7",
	"1.0+5",
	"1.0.post456.dev34",
	"1.0.post456",
	"1.0.15",
	"1.1.dev1",
	"1.12.0rc1",
	"1.12.0",
	"2!0.1",
}

// TestVersionOrderMatchesPackaging compares every pair of the ordering.
func TestVersionOrderMatchesPackaging(t *testing.T) {
	t.Parallel()
	for i, a := range packagingOrder {
		for j, b := range packagingOrder {
			pa, ok := parseVersion(a)
			pb, ok2 := parseVersion(b)
			if !ok || !ok2 {
				t.Fatalf("parse %q: %v, %q: %v", a, ok, b, ok2)
			}
			want := 0
			if i < j {
				want = -1
			} else if i > j {
				want = 1
			}
			if got := compareVersions(pa, pb); got != want {
				t.Errorf("compare(%q, %q) = %d, want %d", a, b, got, want)
			}
		}
	}
}

// TestVersionNormalisation is PEP 440's normalisation: spellings that are
// the same version compare equal.
func TestVersionNormalisation(t *testing.T) {
	t.Parallel()
	for _, c := range [][2]string{
		{"1.0", "1.0.0"}, {"1", "1.0.0.0"}, {"v1.0", "1.0"}, {"1.0", " 1.0\n"},
		{"0!1.0", "1.0"}, {"01.002", "1.2"}, {"1.0A1", "1.0a1"},
		{"1.0alpha1", "1.0a1"}, {"1.0-a1", "1.0a1"}, {"1.0.a.1", "1.0a1"}, {"1.0a", "1.0a0"},
		{"1.0beta2", "1.0b2"}, {"1.0c1", "1.0rc1"}, {"1.0pre1", "1.0rc1"}, {"1.0preview1", "1.0rc1"},
		{"1.0-1", "1.0.post1"}, {"1.0rev1", "1.0.post1"}, {"1.0r1", "1.0.post1"}, {"1.0post", "1.0.post0"},
		{"1.0_post_1", "1.0.post1"}, {"1.0-dev1", "1.0.dev1"}, {"1.0dev", "1.0.dev0"},
		{"1.0+ABC", "1.0+abc"}, {"1.0+abc-1", "1.0+abc.1"}, {"1.0+abc_01", "1.0+abc.1"},
	} {
		a, ok := parseVersion(c[0])
		b, ok2 := parseVersion(c[1])
		if !ok || !ok2 || compareVersions(a, b) != 0 {
			t.Errorf("%q and %q: parsed %v %v, want equal versions", c[0], c[1], ok, ok2)
		}
	}
}

// TestVersionAtLeast is the comparison pulpcore's is_compatible makes:
// a worker's version at or above the task's.
func TestVersionAtLeast(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		have, least string
		want        bool
	}{
		{"1.12.0", "1.12.0", true},
		{"1.12", "1.12.0", true},
		{"1.12.0rc1", "1.12.0", false},
		{"1.11.9", "1.12.0", false},
		{"1.12.0.post1", "1.12.0", true},
		{"1.12.0.dev1", "1.12.0a1", false},
		{"1.12.0+local", "1.12.0", true},
		{"1.9.0", "1.12.0", false},
		{"3.116.0", "3.85.0", true},
		// Not PEP 440: pulpcore's parse raises, the worker never runs it.
		{"not-a-version", "1.0", false},
		{"1.0", "latest", false},
		{"", "1.0", false},
		{"1.0.", "1.0", false},
		{"1..0", "1.0", false},
		{"1.0+", "1.0", false},
		{"1.0+a..b", "1.0", false},
		{"1.0 final", "1.0", false},
	} {
		if got := VersionAtLeast(c.have, c.least); got != c.want {
			t.Errorf("VersionAtLeast(%q, %q) = %v, want %v", c.have, c.least, got, c.want)
		}
	}
}

// TestVersionSortIsTotal sorts the ordering reversed and gets it back.
func TestVersionSortIsTotal(t *testing.T) {
	t.Parallel()
	got := slices.Clone(packagingOrder)
	slices.Reverse(got)
	slices.SortStableFunc(got, func(a, b string) int {
		pa, _ := parseVersion(a)
		pb, _ := parseVersion(b)
		return compareVersions(pa, pb)
	})
	if !slices.Equal(got, packagingOrder) {
		t.Errorf("sorted %v, want %v", got, packagingOrder)
	}
}
