package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/lock-reaper/lock-reaper/internal/exitcode"
)

func init() {
	registerCommand("completion", command{
		summary: "print a shell completion script of the commands and their flags: bash, zsh or fish",
		args:    "SHELL (bash, zsh or fish)",
		keys:    noKeys, run: runCompletion,
		exits: []exitCode{{0, "printed"}, {2, "no shell named, or one of which no script is made"}},
	})
}

// completionShells are the shells a script is made for, each with how it is
// loaded, which the script's first lines say.
var completionShells = map[string]func(io.Writer, []completedCommand){
	"bash": writeBashCompletion, "zsh": writeZshCompletion, "fish": writeFishCompletion,
}

func runCompletion(ctx context.Context, env Env, args []string) int {
	fs := flag.NewFlagSet("completion", flag.ContinueOnError)
	shell, code, ok := parseWithPositional(fs, env, args, "SHELL")
	if !ok {
		return code
	}
	write, known := completionShells[shell]
	if !known {
		fmt.Fprintf(env.Stderr, "lock-reaper completion: no script for %q: name bash, zsh or fish\n", shell)
		return exitcode.Usage
	}
	write(env.Stdout, completedCommands(ctx))
	return exitcode.OK
}

// completedCommand is a command as its completion offers it.
type completedCommand struct {
	name, summary string
	flags         []completedFlag
	// args are the words offered for its positional argument.
	args []string
}

// completedFlag is one flag: whether it takes a value, and which values
// when they are a fixed set (a setting's kind "text|json|json-pretty") or
// a file.
type completedFlag struct {
	name, usage string
	value       bool
	choices     []string
	file        bool
}

// completedCommands lists every command with the flags it accepts, read
// from the flag sets the commands define themselves (Env.flagSets), so that
// the scripts never fall behind the commands.
func completedCommands(ctx context.Context) []completedCommand {
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([]completedCommand, 0, len(names))
	for _, n := range names {
		c := completedCommand{name: n, summary: shortText(commands[n].summary)}
		var fs *flag.FlagSet
		commands[n].run(ctx, Env{Args: []string{n}, Stdout: io.Discard, Stderr: io.Discard,
			LookupEnv: func(string) (string, bool) { return "", false }, flagSets: func(f *flag.FlagSet) { fs = f }}, nil)
		if fs != nil {
			for _, name := range usableFlags(fs) {
				c.flags = append(c.flags, completedFlagOf(fs.Lookup(name)))
			}
		}
		if n == "completion" {
			c.args = []string{"bash", "fish", "zsh"}
		}
		out = append(out, c)
	}
	return out
}

func completedFlagOf(f *flag.Flag) completedFlag {
	kind, usage := flag.UnquoteUsage(f)
	cf := completedFlag{name: f.Name, usage: shortText(usage)}
	if b, ok := f.Value.(interface{ IsBoolFlag() bool }); !ok || !b.IsBoolFlag() {
		cf.value = true
	}
	switch {
	case kind == "file":
		cf.file = true
	case strings.Contains(kind, "|") && !strings.ContainsAny(kind, " ."):
		cf.choices = strings.Split(kind, "|")
	}
	return cf
}

// shortText is the first clause of a help text, without the characters a
// shell's quoting would have to escape beyond ' and : (each script escapes
// those): a completion menu has one line per entry.
func shortText(s string) string {
	for _, cut := range []string{" (", "; ", ". "} {
		s, _, _ = strings.Cut(s, cut)
	}
	s = strings.Map(func(r rune) rune {
		if strings.ContainsRune(`"[]$\`+"`", r) || r < ' ' || r > '~' {
			return ' '
		}
		return r
	}, s)
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 60 {
		if i := strings.LastIndex(s[:60], " "); i > 0 {
			s = s[:i]
		}
		s += "..."
	}
	return s
}
