package cli

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/lock-reaper/lock-reaper/internal/config"
	"github.com/lock-reaper/lock-reaper/internal/exitcode"
)

// completionShells are the shells cobra writes a script for. Each script
// asks the binary (its hidden __complete command) what to offer, so it
// never falls behind the commands and their flags.
var completionShells = map[string]func(root *cobra.Command, w io.Writer) error{
	"bash":       func(root *cobra.Command, w io.Writer) error { return root.GenBashCompletionV2(w, true) },
	"zsh":        func(root *cobra.Command, w io.Writer) error { return root.GenZshCompletion(w) },
	"fish":       func(root *cobra.Command, w io.Writer) error { return root.GenFishCompletion(w, true) },
	"powershell": func(root *cobra.Command, w io.Writer) error { return root.GenPowerShellCompletionWithDesc(w) },
}

const shellNames = "bash, zsh, fish or powershell"

func completionCommand() command {
	return command{
		name: "completion", summary: "print a shell completion script of the commands, their flags and the values of settings: " + shellNames,
		arg: "SHELL (" + shellNames + ")", argName: "SHELL",
		exits: []exitCode{{0, "printed"}, {2, "no shell named, or one of which no script is made"}},
		flags: func(cmd *cobra.Command, _ *config.Loader) runFunc {
			cmd.ValidArgsFunction = choices([]string{"bash", "fish", "powershell", "zsh"})
			return func(_ context.Context, env Env, args []string) int {
				write, known := completionShells[args[0]]
				if !known {
					fmt.Fprintf(env.Stderr, "lock-reaper completion: no script for %q: name %s\n", args[0], shellNames)
					return exitcode.Usage
				}
				if err := write(cmd.Root(), env.Stdout); err != nil {
					return exitcode.Failed
				}
				return exitcode.OK
			}
		},
	}
}

// completeFlagValues gives each flag of cmd that takes a value what to
// complete it with, unless the command chose already: a setting's fixed
// values (a kind such as "text|json|json-pretty"), file names for a file
// or a path, nothing otherwise.
func completeFlagValues(cmd *cobra.Command) {
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if f.NoOptDefVal != "" || f.Name == "help" {
			return // takes no value
		}
		if _, chosen := cmd.GetFlagCompletionFunc(f.Name); chosen {
			return
		}
		kind, _ := pflag.UnquoteUsage(f)
		var complete cobra.CompletionFunc
		switch {
		case kind == "file" || kind == "path":
			complete = func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
				return nil, cobra.ShellCompDirectiveDefault
			}
		case strings.Contains(kind, "|") && !strings.ContainsAny(kind, " ."):
			complete = choices(strings.Split(kind, "|"))
		default:
			complete = cobra.NoFileCompletions
		}
		// Registering fails only for a flag of another command or one
		// registered twice, neither of which VisitAll gives.
		_ = cmd.RegisterFlagCompletionFunc(f.Name, complete)
	})
}

// choices completes one of values, those that start with what is typed:
// cobra's FixedCompletions leaves that to the shell, which not every
// script does.
func choices(values []string) cobra.CompletionFunc {
	return func(_ *cobra.Command, _ []string, typed string) ([]cobra.Completion, cobra.ShellCompDirective) {
		var out []cobra.Completion
		for _, v := range values {
			if strings.HasPrefix(v, typed) {
				out = append(out, v)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}
