package cli

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/lock-reaper/lock-reaper/internal/nearest"
)

// flagError names a flag the command does not define the way an operator
// typed it, with the nearest flag the command has, as a misspelt setting
// is; a configuration key the command does not use is said to be one. Any
// other parse error is pflag's own message.
func flagError(cmd *cobra.Command, err error) error {
	name, dashes, unknown := unknownFlag(err)
	if !unknown {
		return err
	}
	msg := fmt.Sprintf("unknown flag %s%s", dashes, name)
	var names []string
	cmd.Flags().VisitAll(func(f *pflag.Flag) { names = append(names, f.Name) })
	switch k, isKey := keyFlags()[name]; {
	case dashes == "-" && cmd.Flags().Lookup(name) != nil:
		msg += "; long flags take two dashes: --" + name
	case isKey && cmd.Flags().Lookup(name) == nil:
		msg += fmt.Sprintf(": %s is a setting %s does not use", k.Key, cmd.Name())
	default:
		if near := nearest.Names(name, names, 1, false); len(near) > 0 {
			msg += "; did you mean --" + near[0] + "?"
		}
	}
	return errors.New(msg)
}

// unknownFlag reads the flag's name out of pflag's "unknown flag: --name"
// and, for Go's single-dash long flags, "unknown shorthand flag: 'n' in
// -name".
func unknownFlag(err error) (name, dashes string, ok bool) {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "unknown flag: --"); ok {
		return name, "--", true
	}
	if strings.HasPrefix(msg, "unknown shorthand flag: ") {
		if _, arg, found := strings.Cut(msg, " in -"); found {
			name, _, _ = strings.Cut(arg, "=")
			return name, "-", true
		}
	}
	return "", "", false
}
