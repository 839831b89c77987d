package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/lock-reaper/lock-reaper/internal/config"
	"github.com/lock-reaper/lock-reaper/internal/exitcode"
)

// command is one subcommand: one entry of the table is all a new command
// needs for its help, its flag checks and its dispatch.
type command struct {
	// summary is the one line of what the command does; its help starts with it.
	summary string
	// args names the positional arguments in the usage line, e.g. "TASK_ID".
	args string
	// keys picks the configuration keys the command uses: only those are
	// listed in its help and accepted as flags (environment and file still
	// take every key).
	keys func(config.Key) bool
	// exits are the command's exit codes; its help ends with them.
	exits []exitCode
	run   func(ctx context.Context, env Env, args []string) int
}

type exitCode struct {
	code int
	what string
}

// registerCommand adds a subcommand; features add theirs from their own files.
func registerCommand(name string, c command) {
	if c.keys == nil {
		c.keys = readKeys
	}
	if len(c.exits) == 0 {
		c.exits = genericExits
	}
	commands[name] = c
}

// register adds a subcommand with the keys of a read-only command and the
// generic exit codes; registerCommand says more.
//
//lint:ignore U1000 the short form for commands that need no more than a summary
func register(name, summary string, run func(ctx context.Context, env Env, args []string) int) {
	registerCommand(name, command{summary: summary, run: run})
}

// Key sets of the commands.
var (
	allKeys = func(config.Key) bool { return true }
	noKeys  = func(config.Key) bool { return false }
	// readKeys: everything but the daemon's scheduling and metrics.
	readKeys = func(k config.Key) bool { return k.Group != config.GroupRun }
	// passKeys: a one-shot pass also pushes its metrics.
	passKeys = func(k config.Key) bool { return readKeys(k) || pushKey(k) }
	// runKeys: the daemon is scraped, it pushes nothing.
	runKeys = func(k config.Key) bool { return !pushKey(k) }
	// pushKey: the keys of the Pushgateway push.
	pushKey = func(k config.Key) bool { return k.Key == "pushgateway_url" || k.Key == "pushgateway_grouping" }
)

// The exit texts several commands share.
const (
	usageOrConfig = "usage or configuration error (also: a Redis database index out of range, failed authentication, no such database, not Pulp's database)"
	unreadable    = "Redis or PostgreSQL could not be read"
)

var (
	genericExits = []exitCode{{0, "done"}, {1, unreadable}, {2, "usage or configuration error"}}
	auditExits   = []exitCode{
		{0, "nothing to do"},
		{1, "the pass could not complete"},
		{2, usageOrConfig},
		{3, "a real pass would release a lock or update a task (findings that first need confirmation count)"},
		{4, "a guard would hold work back"},
	}
	onceExits = []exitCode{
		{0, "the pass completed, whatever it released"},
		{1, "the pass could not complete"},
		{2, usageOrConfig},
		{4, "a guard held work back"},
	}
)

// helpWidth is the width help is wrapped to: help is read on any terminal
// and in a pager, and must be the same everywhere.
const helpWidth = 80

// writeHelp prints a command's help: what it does, how it is called, its
// own flags, the configuration keys it uses, and its exit codes. fs may be
// nil for a command without flags.
func writeHelp(w io.Writer, name string, fs *flag.FlagSet) {
	c := commands[name]
	fmt.Fprintf(w, "lock-reaper %s: %s\n", name, c.summary)
	usageLine := "lock-reaper " + name
	if c.args != "" {
		usageLine += " " + c.args
	}
	if fs != nil {
		usageLine += " [flags]"
	}
	fmt.Fprintf(w, "\nUsage: %s\n", usageLine)

	keys := config.Keys()
	isKey := map[string]bool{config.ConfigFlag: true}
	for _, k := range keys {
		isKey[k.Flag] = true
	}
	if fs != nil {
		var own []*flag.Flag
		// A command without --config (demo) has no configuration keys: a
		// flag named like one (--redis-url) is its own and is listed.
		configured := fs.Lookup(config.ConfigFlag) != nil
		fs.VisitAll(func(f *flag.Flag) {
			if !configured || !isKey[f.Name] {
				own = append(own, f)
			}
		})
		if len(own) > 0 {
			fmt.Fprintln(w, "\nFlags:")
			for _, f := range own {
				writeFlag(w, f)
			}
		}
	}
	used := usedKeys(c, keys)
	if fs != nil && fs.Lookup(config.ConfigFlag) != nil && len(used) > 0 {
		fmt.Fprintf(w, "\nConfiguration\n%s", wrapText(fmt.Sprintf("Each key below is a flag, an environment variable (also as "+
			"NAME_FILE, a file holding the value) and a key of the YAML file that --config FILE or %s names. "+
			"Flags win over the environment, which wins over the file.", config.ConfigEnv), "  ", helpWidth))
		group := ""
		for _, k := range used {
			if k.Group != group {
				group = k.Group
				fmt.Fprintf(w, "\n%s\n", group)
			}
			def := k.Default
			if def == "" {
				def = `""`
			}
			fmt.Fprintf(w, "  --%s %s  (%s, %s; default %s)\n", k.Flag, k.Kind, k.Key, k.Env, def)
			fmt.Fprint(w, wrapText(k.Doc, "      ", helpWidth))
		}
	}
	fmt.Fprintln(w, "\nExit codes:")
	for _, e := range c.exits {
		fmt.Fprint(w, hangingText(fmt.Sprintf("  %d  ", e.code), e.what, helpWidth))
	}
}

func usedKeys(c command, keys []config.Key) []config.Key {
	var out []config.Key
	for _, k := range keys {
		if c.keys(k) {
			out = append(out, k)
		}
	}
	return out
}

func writeFlag(w io.Writer, f *flag.Flag) {
	kind, text := flag.UnquoteUsage(f)
	head := "  --" + f.Name
	if kind != "" {
		head += " " + kind
	}
	if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0" {
		text += " (default " + f.DefValue + ")"
	}
	fmt.Fprintln(w, head)
	fmt.Fprint(w, wrapText(text, "      ", helpWidth))
}

// hangingText is text wrapped after head, its later lines aligned under
// the first word.
func hangingText(head, text string, width int) string {
	body := wrapText(text, strings.Repeat(" ", len(head)), width)
	return head + strings.TrimLeft(body, " ")
}

// wrapText wraps text at word boundaries to width, each line indented.
func wrapText(text, indent string, width int) string {
	var b strings.Builder
	line := indent
	for _, word := range strings.Fields(text) {
		if len(line) > len(indent) && len(line)+1+len(word) > width {
			b.WriteString(line + "\n")
			line = indent
		}
		if len(line) > len(indent) {
			line += " "
		}
		line += word
	}
	if len(line) > len(indent) {
		b.WriteString(line + "\n")
	}
	return b.String()
}

// parseFlags parses a subcommand's flags. -h prints the command's help on
// stdout (exit 0); a bad flag, or a configuration key's flag the command does
// not use, is a usage error. At most maxArgs positional arguments are
// accepted.
func parseFlags(fs *flag.FlagSet, env Env, args []string, maxArgs int) (int, bool) {
	if env.flagSets != nil {
		env.flagSets(fs)
		return exitcode.OK, false
	}
	if err := parseArgs(fs, env, args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			writeHelp(env.Stdout, fs.Name(), fs)
			return exitcode.OK, false
		}
		fmt.Fprintf(env.Stderr, "Run 'lock-reaper %s -h' for its flags.\n", fs.Name())
		return exitcode.Usage, false
	}
	if fs.NArg() > maxArgs {
		fmt.Fprintf(env.Stderr, "lock-reaper %s: unexpected argument %q\n", fs.Name(), fs.Arg(maxArgs))
		return exitcode.Usage, false
	}
	if err := checkUnusedKeys(fs); err != nil {
		fmt.Fprintf(env.Stderr, "lock-reaper %s: %v\n", fs.Name(), err)
		return exitcode.Usage, false
	}
	return 0, true
}

// checkUnusedKeys refuses the flag of a configuration key the command does
// not use: `audit --schedule` would otherwise be silently ignored.
func checkUnusedKeys(fs *flag.FlagSet) error {
	c, ok := commands[fs.Name()]
	if !ok || fs.Lookup(config.ConfigFlag) == nil {
		return nil // no configuration flags: the command's flags are its own
	}
	byFlag := map[string]config.Key{}
	for _, k := range config.Keys() {
		byFlag[k.Flag] = k
	}
	var err error
	fs.Visit(func(f *flag.Flag) {
		if k, isKey := byFlag[f.Name]; isKey && !c.keys(k) && err == nil {
			err = fmt.Errorf("--%s (%s) is not used by %s; see 'lock-reaper %s -h'", f.Name, k.Key, fs.Name(), fs.Name())
		}
	})
	return err
}
