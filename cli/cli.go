// Package cli is lock-reaper's command line: it parses, wires the reaper to
// Redis and PostgreSQL, runs the command and turns its report into output and
// an exit code. main only hands it the process's environment, so tests call
// Main directly.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"

	"github.com/lock-reaper/lock-reaper/reaper"
)

// Env is the process environment a command runs in.
type Env struct {
	Args      []string
	Stdin     io.Reader
	Stdout    io.Writer
	Stderr    io.Writer
	LookupEnv func(string) (string, bool)
	Version   string
}

// command is one subcommand.
type command struct {
	summary string
	run     func(ctx context.Context, env Env, args []string) int
}

var commands map[string]command

func init() {
	commands = map[string]command{
		"audit":   {"one dry-run pass: report what a real pass would do, write nothing", runAudit},
		"once":    {"one real pass: release stale locks, update lost tasks", runOnce},
		"config":  {"validate the configuration and print the effective values", runConfig},
		"version": {"print the version", runVersion},
	}
}

// register adds a subcommand; later features add theirs from their own files.
func register(name, summary string, run func(ctx context.Context, env Env, args []string) int) {
	commands[name] = command{summary, run}
}

// Main runs the command named by env.Args and returns the exit code.
func Main(ctx context.Context, env Env) int {
	if env.LookupEnv == nil {
		env.LookupEnv = func(string) (string, bool) { return "", false }
	}
	if len(env.Args) == 0 || env.Args[0] == "-h" || env.Args[0] == "--help" || env.Args[0] == "help" {
		usage(env.Stderr)
		if len(env.Args) == 0 {
			return reaper.ExitUsage
		}
		return reaper.ExitOK
	}
	cmd, ok := commands[env.Args[0]]
	if !ok {
		fmt.Fprintf(env.Stderr, "lock-reaper: unknown command %q\n\n", env.Args[0])
		usage(env.Stderr)
		return reaper.ExitUsage
	}
	return cmd.run(ctx, env, env.Args[1:])
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "Usage: lock-reaper COMMAND [flags]")
	fmt.Fprintln(w, "\nCommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-8s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w, "\nRun 'lock-reaper COMMAND -h' for the flags of a command.")
	fmt.Fprintln(w, "Exit codes: 0 ok, 1 the pass failed, 2 usage or configuration error,")
	fmt.Fprintln(w, "3 audit found work a real pass would do, 4 a guard held work back.")
}

// parseFlags parses a subcommand's flags; a usage error prints the flags and
// returns ExitUsage.
// At most maxArgs positional arguments are accepted.
func parseFlags(fs *flag.FlagSet, env Env, args []string, maxArgs int) (int, bool) {
	fs.SetOutput(env.Stderr)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return reaper.ExitOK, false
		}
		return reaper.ExitUsage, false
	}
	if fs.NArg() > maxArgs {
		fmt.Fprintf(env.Stderr, "lock-reaper %s: unexpected argument %q\n", fs.Name(), fs.Arg(maxArgs))
		return reaper.ExitUsage, false
	}
	return 0, true
}

func runVersion(_ context.Context, env Env, _ []string) int {
	fmt.Fprintf(env.Stdout, "lock-reaper %s\n", env.Version)
	return reaper.ExitOK
}
