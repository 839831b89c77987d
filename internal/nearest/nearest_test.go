package nearest

import (
	"reflect"
	"testing"
)

func TestDistance(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{{"URL", "ULR", 1}, {"", "abc", 3}, {"kitten", "sitting", 3}, {"same", "same", 0}} {
		if got := Distance(c.a, c.b); got != c.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}

func TestNames(t *testing.T) {
	cands := []string{"1@pulp-worker-3", "1@pulp-worker-2", "7@api", "1@pulp-worker-3"}
	if got := Names("1@pulp-wroker-3", cands, 2, false); !reflect.DeepEqual(got, []string{"1@pulp-worker-3", "1@pulp-worker-2"}) {
		t.Fatalf("got %v", got)
	}
	if got := Names("zzzzzzzzzzzzzzzzzzzzzzz", cands, 5, false); len(got) != 0 {
		t.Fatalf("far names kept: %v", got)
	}
	if got := Names("x", cands, 1, true); len(got) != 1 {
		t.Fatalf("keepFar: %v", got)
	}
}
