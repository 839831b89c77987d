// Package cli is lock-reaper's command line: it parses, wires the reaper to
// Redis and PostgreSQL, runs the command and turns its report into output and
// an exit code. main only hands it the process's environment, so tests call
// Main directly.
package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"sort"

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
	// flagSets, when set, is handed each command's flag set instead of
	// parsing it, and the command returns without doing anything: the
	// completion scripts are made from the flags the commands define.
	flagSets func(*flag.FlagSet)
}

var commands = map[string]command{}

func init() {
	registerCommand("audit", command{
		summary: "one dry-run pass: report what a real pass would do, write nothing",
		keys:    passKeys, exits: auditExits, run: runAudit,
	})
	registerCommand("once", command{
		summary: "one real pass: release stale locks, update lost tasks",
		keys:    passKeys, exits: onceExits, run: runOnce,
	})
	registerCommand("config", command{
		summary: "validate the configuration and print the effective values, secrets redacted",
		keys:    allKeys, exits: []exitCode{{0, "the configuration is valid"}, {2, "it is not (every problem is named)"}}, run: runConfig,
	})
	registerCommand("version", command{
		summary: "print the version, the commit it was built from, the build date and the Go version",
		keys:    noKeys, exits: []exitCode{{0, "always"}}, run: runVersion,
	})
}

// Main runs the command named by env.Args and returns the exit code.
func Main(ctx context.Context, env Env) int {
	if env.LookupEnv == nil {
		env.LookupEnv = func(string) (string, bool) { return "", false }
	}
	if len(env.Args) == 0 {
		usage(env.Stderr)
		return exitcode.Usage
	}
	switch env.Args[0] {
	case "-h", "-help", "--help", "help":
		if len(env.Args) > 1 {
			if _, ok := commands[env.Args[1]]; ok {
				return commands[env.Args[1]].run(ctx, env, []string{"-h"})
			}
		}
		usage(env.Stdout)
		return exitcode.OK
	case "-version", "--version":
		return runVersion(ctx, env, nil)
	}
	cmd, ok := commands[env.Args[0]]
	if !ok {
		fmt.Fprintf(env.Stderr, "lock-reaper: unknown command %q\n\n", env.Args[0])
		usage(env.Stderr)
		return exitcode.Usage
	}
	return cmd.run(ctx, env, env.Args[1:])
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "lock-reaper releases Pulp's stale Redis locks and cancels or requeues the tasks their dead workers lost.")
	fmt.Fprintln(w, "\nUsage: lock-reaper COMMAND [flags]")
	fmt.Fprintln(w, "\nCommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-8s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w, "\nRun 'lock-reaper COMMAND -h' for what a command does, its flags and its exit codes;")
	fmt.Fprintln(w, "'lock-reaper --version' for the version.")
	fmt.Fprintln(w, "Exit codes: 0 ok, 1 the pass failed, 2 usage or configuration error,")
	fmt.Fprintln(w, "3 audit found work a real pass would do, 4 a guard held work back, 5 declined at a prompt.")
}
