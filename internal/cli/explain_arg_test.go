package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/lock-reaper/lock-reaper/internal/explain"
	"github.com/lock-reaper/lock-reaper/internal/testing/passtest"
	"github.com/stretchr/testify/require"
)

// TestTaskIDOf: explain takes a task as Pulp shows it, in every form.
func TestTaskIDOf(t *testing.T) {
	t.Parallel()
	const id = "6f1c2a3b-0000-4000-8000-00000000abcd"
	upper := strings.ToUpper(id)
	for _, arg := range []string{
		id,
		upper,
		" " + id + "\n",
		"/pulp/api/v3/tasks/" + id + "/",
		"/pulp/api/v3/tasks/" + id,
		"/pulp/default/api/v3/tasks/" + id + "/", // domains enabled
		"/pulp/my-domain/api/v3/tasks/" + upper + "/", // domain name with a dash
		"/custom/root/api/v3/tasks/" + id + "/",       // API_ROOT other than /pulp/
		"/api/v3/tasks/" + id + "/",                   // API_ROOT = "/"
		"https://pulp.example.com/pulp/api/v3/tasks/" + id + "/",
		"http://localhost:24817/pulp/default/api/v3/tasks/" + id + "/",
		"prn:core.task:" + id,
		"PRN:core.task:" + upper,
	} {
		got, err := taskIDOf(arg)
		require.NoError(t, err, arg)
		require.Equal(t, id, got, arg)
	}
	for _, arg := range []string{
		"",
		"not-a-uuid",
		"/pulp/api/v3/tasks/",
		"/pulp/api/v3/tasks/" + id + "/cancel/",
		"/pulp/api/v3/task-groups/" + id + "/",
		"/pulp/api/v3/repositories/rpm/rpm/" + id + "/",
		"/api/v3/tasks/" + id + "//",
		"https://pulp.example.com/pulp/api/v3/tasks/" + id + "/?fields=state",
		"prn:core.taskgroup:" + id,
		"prn:rpm.rpmrepository:" + id,
		"task:" + id,
		id + "x",
	} {
		_, err := taskIDOf(arg)
		require.Error(t, err, arg)
		require.Contains(t, err.Error(), "is not a task UUID, a task href")
	}
}

// TestExplainAcceptsHrefAndPRN: the href and the PRN of a real task explain
// the same task as its UUID.
func TestExplainAcceptsHrefAndPRN(t *testing.T) {
	t.Parallel()
	f := newOpsFleet(t)
	target := f.task("waiting", "", []string{passtest.Repo()}, time.Minute)
	for _, arg := range []string{target, "/pulp/api/v3/tasks/" + target + "/", "/pulp/default/api/v3/tasks/" + target + "/", "prn:core.task:" + target} {
		ex := f.explain(arg)
		require.Equal(t, target, ex.TaskID, arg)
		require.Equal(t, explain.StatusReady, ex.Status, arg)
	}
}
