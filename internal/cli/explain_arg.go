package cli

import "github.com/lock-reaper/lock-reaper/internal/explain"

// taskIDOf reads the task an operator names on the command line, in any of
// the forms Pulp shows it (see explain.TaskIDOf, which the status page's task
// links share).
func taskIDOf(arg string) (string, error) { return explain.TaskIDOf(arg) }
