package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/pflag"

	"github.com/lock-reaper/lock-reaper/internal/config"
)

// Key sets of the commands.
var (
	allKeys = func(config.Key) bool { return true }
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
// own flags, the configuration keys it binds, and its exit codes.
func writeHelp(w io.Writer, c command, fs *pflag.FlagSet) {
	fmt.Fprintf(w, "lock-reaper %s: %s\n", c.name, c.summary)
	usageLine := "lock-reaper " + c.name
	if c.arg != "" {
		usageLine += " " + c.arg
	}
	own := ownFlags(fs)
	if len(own) > 0 || c.keys != nil {
		usageLine += " [flags]"
	}
	fmt.Fprintf(w, "\nUsage: %s\n", usageLine)
	if len(own) > 0 {
		fmt.Fprintln(w, "\nFlags:")
		for _, f := range own {
			writeFlag(w, f)
		}
	}
	if used := boundKeys(fs, c); len(used) > 0 {
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

// ownFlags lists fs's flags that are not configuration keys (all of them
// for a command without --config), help left out.
func ownFlags(fs *pflag.FlagSet) []*pflag.Flag {
	keys := keyFlags()
	configured := fs.Lookup(config.ConfigFlag) != nil
	var own []*pflag.Flag
	fs.VisitAll(func(f *pflag.Flag) {
		if _, isKey := keys[f.Name]; (configured && isKey) || f.Name == "help" {
			return
		}
		own = append(own, f)
	})
	return own
}

// boundKeys are the configuration keys c binds as flags on fs, in the
// table's order.
func boundKeys(fs *pflag.FlagSet, c command) []config.Key {
	if c.keys == nil {
		return nil
	}
	var out []config.Key
	for _, k := range config.Keys() {
		if fs.Lookup(k.Flag) != nil {
			out = append(out, k)
		}
	}
	return out
}

func writeFlag(w io.Writer, f *pflag.Flag) {
	kind, text := pflag.UnquoteUsage(f)
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
