// Package cli is lock-reaper's command line: it parses, wires the reaper to
// Redis and PostgreSQL, runs the command and turns its report into output and
// an exit code. main only hands it the process's environment, so tests call
// Main directly.
package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/lock-reaper/lock-reaper/internal/exitcode"
)

// Env is the process environment a command runs in.
type Env struct {
	Args      []string
	Stdin     io.Reader
	Stdout    io.Writer
	Stderr    io.Writer
	LookupEnv func(string) (string, bool)
	// Environ lists the environment (os.Environ) so that a misspelt
	// REAPER_* variable is an error; nil skips that check.
	Environ func() []string
	// Version, Revision and BuildDate are what the build stamped into the
	// binary (-ldflags -X main.version=...); `version` completes them from
	// the build information Go records (versionText).
	Version   string
	Revision  string
	BuildDate string

	// textLayout, when set, is the layout of text reports instead of the
	// one stdout calls for (the demo asks for the terminal's grouping).
	textLayout *layout
}

// commands are the subcommands, in no particular order (help sorts them).
func commands() []command {
	return []command{
		auditCommand(), onceCommand(), configCommand(), versionCommand(), completionCommand(),
		demoCommand(), doctorCommand(), explainCommand(), locksCommand(), releaseCommand(),
		runCommand(), statusCommand(),
	}
}

// Main runs the command named by env.Args and returns the exit code.
func Main(ctx context.Context, env Env) int {
	if env.LookupEnv == nil {
		env.LookupEnv = func(string) (string, bool) { return "", false }
	}
	code := exitcode.OK
	root := newRoot(env, &code)
	cmd, err := root.ExecuteContextC(ctx)
	if err != nil {
		// Whatever cobra refuses before a command runs is a usage error:
		// an unknown command or flag, a bad flag value, a missing argument.
		if cmd == nil || cmd == root {
			fmt.Fprintf(env.Stderr, "lock-reaper: %v\n\n", err)
			usage(env.Stderr)
		} else {
			fmt.Fprintf(env.Stderr, "lock-reaper %s: %v\nRun 'lock-reaper %s --help' for its usage.\n", cmd.Name(), err, cmd.Name())
		}
		return exitcode.Usage
	}
	return code
}

// usage is the top-level help: what the program does, its commands and
// the exit codes they share.
func usage(w io.Writer) {
	fmt.Fprintln(w, "lock-reaper releases Pulp's stale Redis locks and cancels or requeues the tasks their dead workers lost.")
	fmt.Fprintln(w, "\nUsage: lock-reaper COMMAND [flags]")
	fmt.Fprintln(w, "\nCommands:")
	for _, c := range sortedCommands() {
		fmt.Fprintf(w, "  %-10s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\nRun 'lock-reaper help COMMAND' (or 'lock-reaper COMMAND --help') for what a command does, its flags")
	fmt.Fprintln(w, "and its exit codes; 'lock-reaper --version' for the version.")
	fmt.Fprintln(w, "Exit codes: 0 ok, 1 the pass failed, 2 usage or configuration error,")
	fmt.Fprintln(w, "3 audit found work a real pass would do, 4 a guard held work back, 5 declined at a prompt.")
}
