package explain

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/lock-reaper/lock-reaper/reaper/judge"
)

// taskPRNPrefix starts the Pulp Resource Name of a task: pulpcore's get_prn
// writes prn:<app label>.<model name>:<pk>, and tasks are core.task.
const taskPRNPrefix = "prn:core.task:"

// TaskIDOf reads the task an operator names on the command line, in any of
// the forms Pulp shows it: the bare UUID, the task's href as the API returns
// it (/pulp/api/v3/tasks/UUID/; with domains enabled
// /pulp/DOMAIN/api/v3/tasks/UUID/; API_ROOT may be other than /pulp/, and a
// full https:// URL pasted from a browser works too), or its PRN
// (prn:core.task:UUID). UUIDs are compared in lowercase, as Pulp writes them.
func TaskIDOf(arg string) (string, error) {
	s := strings.TrimSpace(arg)
	var id string
	switch {
	case strings.HasPrefix(strings.ToLower(s), taskPRNPrefix):
		id = s[len(taskPRNPrefix):]
	case strings.Contains(s, "://") || strings.HasPrefix(s, "/"):
		id = taskIDOfHref(s)
	default:
		id = s
	}
	id = strings.ToLower(id)
	if !judge.IsTaskUUID(id) {
		return "", fmt.Errorf("%q is not a task UUID, a task href (/pulp/api/v3/tasks/UUID/) or a task PRN (%sUUID)", arg, taskPRNPrefix)
	}
	return id, nil
}

// taskIDOfHref returns the UUID of a task href's path, or "" when the path
// does not end in api/v3/tasks/UUID (one trailing slash optional). What comes
// before api/v3 is the API root and, with domains, the domain's name: any.
func taskIDOfHref(s string) string {
	path := s
	if strings.Contains(s, "://") {
		u, err := url.Parse(s)
		if err != nil || u.RawQuery != "" || u.Fragment != "" {
			return ""
		}
		path = u.Path
	}
	parts := strings.Split(strings.TrimSuffix(path, "/"), "/")
	n := len(parts)
	if n < 5 || parts[n-4] != "api" || parts[n-3] != "v3" || parts[n-2] != "tasks" {
		return ""
	}
	return parts[n-1]
}
