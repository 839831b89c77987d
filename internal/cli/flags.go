package cli

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"strings"

	"github.com/lock-reaper/lock-reaper/internal/config"
	"github.com/lock-reaper/lock-reaper/internal/nearest"
)

// parseArgs parses args on fs. A flag fs does not define is named the way an
// operator typed it, with the nearest flag the command uses, as a misspelt
// setting is; any other parse error is the flag package's own message. Help
// (-h) is returned as flag.ErrHelp for the caller to print.
func parseArgs(fs *flag.FlagSet, env Env, args []string) error {
	var msgs bytes.Buffer
	fs.SetOutput(&msgs)
	fs.Usage = func() {} // help is printed by the caller, on stdout, and only when asked for
	err := fs.Parse(args)
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return err
	}
	name, unknown := strings.CutPrefix(err.Error(), "flag provided but not defined: -")
	if !unknown {
		_, _ = env.Stderr.Write(msgs.Bytes())
		return err
	}
	fmt.Fprintf(env.Stderr, "lock-reaper %s: unknown flag --%s", fs.Name(), name)
	if near := nearest.Names(name, usableFlags(fs), 1, false); len(near) > 0 {
		fmt.Fprintf(env.Stderr, "; did you mean --%s?", near[0])
	}
	fmt.Fprintln(env.Stderr)
	return err
}

// usableFlags lists the names of the flags a command accepts: its own and
// those of the configuration keys it uses (checkUnusedKeys refuses the
// others, so suggesting or completing them would only lead to a refusal).
func usableFlags(fs *flag.FlagSet) []string {
	c, known := commands[fs.Name()]
	byFlag := map[string]config.Key{}
	if known && fs.Lookup(config.ConfigFlag) != nil {
		for _, k := range config.Keys() {
			byFlag[k.Flag] = k
		}
	}
	var out []string
	fs.VisitAll(func(f *flag.Flag) {
		if k, isKey := byFlag[f.Name]; isKey && !c.keys(k) {
			return
		}
		out = append(out, f.Name)
	})
	return out
}
