package cli

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/lock-reaper/lock-reaper/internal/config"
	"github.com/lock-reaper/lock-reaper/internal/exitcode"
)

// command is one subcommand: what its help says, the configuration keys
// it binds, its own flags and what it runs.
type command struct {
	name string
	// summary is the one line of what the command does; its help starts with it.
	summary string
	// arg is the positional argument the command requires, as its usage
	// line shows it (e.g. "TASK (a UUID, ...)"); argName is what an error
	// calls it when it is missing. Empty: no argument.
	arg, argName string
	// keys picks the configuration keys the command uses: only those are
	// flags of the command (environment and file still take every key).
	// nil: the command reads no configuration and has no --config.
	keys func(config.Key) bool
	// exits are the command's exit codes; its help ends with them.
	exits []exitCode
	// flags defines the command's own flags on cmd (and their completion)
	// and returns what runs once they are parsed; loader reads the
	// configuration back, nil when keys is.
	flags func(cmd *cobra.Command, loader *config.Loader) runFunc
}

// runFunc runs a command with its positional arguments and returns the
// exit code.
type runFunc func(ctx context.Context, env Env, args []string) int

type exitCode struct {
	code int
	what string
}

func sortedCommands() []command {
	cs := commands()
	sort.Slice(cs, func(i, j int) bool { return cs[i].name < cs[j].name })
	return cs
}

// newRoot builds the command tree; the command that runs stores its exit
// code in code.
func newRoot(env Env, code *int) *cobra.Command {
	root := &cobra.Command{
		Use:   "lock-reaper",
		Short: "release Pulp's stale Redis locks and cancel or requeue the tasks their dead workers lost",
		// Errors and usage are printed by Main, each once, in its words.
		SilenceErrors: true, SilenceUsage: true,
		// An argument that names no command reaches RunE, which says so
		// with the nearest command.
		Args:              cobra.ArbitraryArgs,
		ValidArgsFunction: cobra.NoFileCompletions,
		// Cobra's own default, which SuggestionsFor does not apply itself.
		SuggestionsMinimumDistance: 2,
		// `completion SHELL` is the project's own command (its help and
		// exit codes are like the others').
		CompletionOptions: cobra.CompletionOptions{DisableDefaultCmd: true},
	}
	version := root.Flags().Bool("version", false, "print the version, as the version command does")
	root.RunE = func(cmd *cobra.Command, args []string) error {
		switch {
		case *version:
			*code = runVersion(cmd.Context(), env, nil)
		case len(args) == 0:
			usage(env.Stderr)
			*code = exitcode.Usage
		default:
			return unknownCommand(root, args[0])
		}
		return nil
	}
	byName := map[string]command{}
	for _, c := range commands() {
		byName[c.name] = c
		root.AddCommand(newCommand(c, env, code))
	}
	root.SetHelpCommand(helpCommand(root, env))
	cobraHelp := root.HelpFunc()
	root.SetHelpFunc(func(cmd *cobra.Command, args []string) {
		c, ours := byName[cmd.Name()]
		switch {
		case cmd == root:
			usage(cmd.OutOrStdout())
		case ours && cmd.Parent() == root:
			writeHelp(cmd.OutOrStdout(), c, cmd.Flags())
		default:
			cobraHelp(cmd, args)
		}
	})
	root.SetFlagErrorFunc(flagError)
	root.SetIn(env.Stdin)
	root.SetOut(env.Stdout)
	root.SetErr(env.Stderr)
	// A copy, never nil: cobra reads os.Args when given none.
	root.SetArgs(append([]string{}, env.Args...))
	return root
}

// newCommand makes the cobra command of c: its keys bound as flags, its
// own flags defined, its argument checked, and its run storing the exit code.
func newCommand(c command, env Env, code *int) *cobra.Command {
	cmd := &cobra.Command{
		Use:               c.name,
		Short:             c.summary,
		Args:              argsOf(c),
		ValidArgsFunction: cobra.NoFileCompletions,
	}
	var loader *config.Loader
	if c.keys != nil {
		loader = config.RegisterKeys(cmd.Flags(), c.keys)
	}
	run := c.flags(cmd, loader)
	completeFlagValues(cmd)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		*code = run(cmd.Context(), env, args)
		return nil
	}
	return cmd
}

// argsOf checks the positional arguments: exactly one when the command
// takes one, none otherwise.
func argsOf(c command) cobra.PositionalArgs {
	want := 0
	if c.arg != "" {
		want = 1
	}
	return func(_ *cobra.Command, args []string) error {
		switch {
		case len(args) < want:
			return fmt.Errorf("missing %s", c.argName)
		case len(args) > want:
			return fmt.Errorf("unexpected argument %q", args[want])
		}
		return nil
	}
}

// unknownCommand names a mistyped command with the nearest one.
func unknownCommand(root *cobra.Command, name string) error {
	msg := fmt.Sprintf("unknown command %q", name)
	if near := root.SuggestionsFor(name); len(near) > 0 {
		msg += "; did you mean " + strings.Join(near, " or ") + "?"
	}
	return errors.New(msg)
}

// helpCommand is `help [COMMAND]`: the command's help, or the top-level
// one, on stdout with exit 0.
func helpCommand(root *cobra.Command, env Env) *cobra.Command {
	return &cobra.Command{
		Use:   "help [COMMAND]",
		Short: "print the help of a command, or the list of commands",
		Args:  cobra.ArbitraryArgs,
		ValidArgsFunction: func(_ *cobra.Command, args []string, typed string) ([]cobra.Completion, cobra.ShellCompDirective) {
			if len(args) > 0 {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			var names []cobra.Completion
			for _, c := range root.Commands() {
				if c.IsAvailableCommand() && strings.HasPrefix(c.Name(), typed) {
					names = append(names, cobra.CompletionWithDesc(c.Name(), c.Short))
				}
			}
			return names, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return root.Help()
			}
			target, _, err := root.Find(args)
			if err != nil || target == root {
				fmt.Fprintf(env.Stderr, "lock-reaper help: %v\n", unknownCommand(root, args[0]))
				return root.Help()
			}
			return target.Help()
		},
	}
}

// keyFlags are the flag names of the configuration: --config and one per
// key. A command's other flags are its own.
func keyFlags() map[string]config.Key {
	m := map[string]config.Key{config.ConfigFlag: {Key: config.ConfigFlag}}
	for _, k := range config.Keys() {
		m[k.Flag] = k
	}
	return m
}
