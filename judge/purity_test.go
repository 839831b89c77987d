package judge

import (
	"os/exec"
	"strings"
	"testing"
)

// ioPackages are what a judge must never reach, directly or not: the
// network, databases, Redis, processes and logs. (os itself cannot be in the
// list: fmt imports it.)
var ioPackages = []string{
	"net", "net/http", "database/sql", "os/exec", "os/signal", "log", "log/slog",
	"github.com/redis/go-redis/v9", "github.com/jackc/pgx/v5", "github.com/jackc/pgx/v5/pgxpool",
	"k8s.io/client-go/kubernetes",
}

// TestJudgeImportsNoIO fails when the judge (or anything it imports) links a
// package that does I/O: the rules must stay plain functions of a snapshot.
func TestJudgeImportsNoIO(t *testing.T) {
	t.Parallel()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go command is not on PATH: cannot list the judge's dependencies")
	}
	out, err := exec.Command(goBin, "list", "-deps", "github.com/lock-reaper/lock-reaper/judge").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps of the judge: %v\n%s", err, out)
	}
	deps := map[string]bool{}
	for _, d := range strings.Fields(string(out)) {
		deps[d] = true
	}
	for _, p := range ioPackages {
		if deps[p] {
			t.Errorf("the judge depends on %s, which does I/O", p)
		}
	}
	for d := range deps {
		for _, prefix := range []string{"github.com/redis/", "github.com/jackc/", "k8s.io/", "github.com/prometheus/"} {
			if strings.HasPrefix(d, prefix) {
				t.Errorf("the judge depends on %s, which does I/O", d)
			}
		}
	}
}
