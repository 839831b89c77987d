package cli

import (
	"fmt"
	"io"
	"sort"
	"strings"
)

// writeBashCompletion: the commands in the first word, then the flags of
// the command typed (a word starting with -), a flag's fixed values after
// it, files elsewhere.
func writeBashCompletion(w io.Writer, cmds []completedCommand) {
	fmt.Fprint(w, `# bash completion for lock-reaper.
# Load it with: source <(lock-reaper completion bash)
# or save it as /etc/bash_completion.d/lock-reaper.
_lock_reaper() {
    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]} flags= args=
    if [[ $COMP_CWORD -eq 1 ]]; then
`)
	fmt.Fprintf(w, "        COMPREPLY=($(compgen -W %q -- \"$cur\"))\n        return\n    fi\n", strings.Join(append(commandNames(cmds), "help"), " "))
	fmt.Fprint(w, "    case $prev in\n")
	choices := map[string]string{}
	for _, c := range cmds {
		for _, f := range c.flags {
			if len(f.choices) > 0 {
				choices["--"+f.name] = strings.Join(f.choices, " ")
			}
		}
	}
	for _, name := range sortedKeys(choices) {
		fmt.Fprintf(w, "        %s) COMPREPLY=($(compgen -W %q -- \"$cur\")); return;;\n", name, choices[name])
	}
	fmt.Fprint(w, "    esac\n    case ${COMP_WORDS[1]} in\n")
	for _, c := range cmds {
		var names []string
		for _, f := range c.flags {
			names = append(names, "--"+f.name)
		}
		fmt.Fprintf(w, "        %s) flags=%q; args=%q;;\n", c.name, strings.Join(names, " "), strings.Join(c.args, " "))
	}
	fmt.Fprint(w, `    esac
    if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "$flags" -- "$cur"))
    elif [[ -n $args ]]; then
        COMPREPLY=($(compgen -W "$args" -- "$cur"))
    else
        COMPREPLY=($(compgen -f -- "$cur"))
    fi
}
complete -F _lock_reaper lock-reaper
`)
}

// writeZshCompletion: _describe for the commands, _arguments for a
// command's flags.
func writeZshCompletion(w io.Writer, cmds []completedCommand) {
	fmt.Fprint(w, `#compdef lock-reaper
# zsh completion for lock-reaper.
# Load it with: source <(lock-reaper completion zsh)
# or save it as _lock-reaper in a directory of $fpath.
_lock_reaper() {
    local -a commands specs
    commands=(
`)
	for _, c := range cmds {
		fmt.Fprintf(w, "        '%s:%s'\n", c.name, zshQuoted(strings.ReplaceAll(c.summary, ":", `\:`)))
	}
	fmt.Fprint(w, `    )
    if (( CURRENT == 2 )); then
        _describe -t commands 'lock-reaper command' commands
        return
    fi
    case $words[2] in
`)
	for _, c := range cmds {
		fmt.Fprintf(w, "        (%s) specs=(", c.name)
		for _, f := range c.flags {
			fmt.Fprintf(w, "\n            '%s'", zshSpec(f))
		}
		if len(c.args) > 0 {
			fmt.Fprintf(w, "\n            '1:shell:(%s)'", strings.Join(c.args, " "))
		}
		fmt.Fprint(w, ");;\n")
	}
	fmt.Fprint(w, `    esac
    shift words
    (( CURRENT-- ))
    _arguments $specs
}
if [[ $zsh_eval_context[-1] == loadautofunc ]]; then
    _lock_reaper "$@"
else
    compdef _lock_reaper lock-reaper
fi
`)
}

// zshSpec is a flag as _arguments takes it: --name[what], and after a
// value flag's = its values (--output=[...]:value:(text json)).
func zshSpec(f completedFlag) string {
	usage := zshQuoted(f.usage) // a colon inside the brackets is text
	spec := fmt.Sprintf("--%s[%s]", f.name, usage)
	if !f.value {
		return spec
	}
	spec = fmt.Sprintf("--%s=[%s]:value:", f.name, usage)
	switch {
	case f.file:
		return spec + "_files"
	case len(f.choices) > 0:
		return spec + "(" + strings.Join(f.choices, " ") + ")"
	}
	return spec + " "
}

// writeFishCompletion: one complete line per command and per flag of it.
func writeFishCompletion(w io.Writer, cmds []completedCommand) {
	fmt.Fprint(w, `# fish completion for lock-reaper.
# Load it with: lock-reaper completion fish | source
# or save it as ~/.config/fish/completions/lock-reaper.fish.
complete -c lock-reaper -f
`)
	for _, c := range cmds {
		fmt.Fprintf(w, "complete -c lock-reaper -n __fish_use_subcommand -a %s -d '%s'\n", c.name, fishQuoted(c.summary))
	}
	for _, c := range cmds {
		cond := fmt.Sprintf("-n '__fish_seen_subcommand_from %s'", c.name)
		for _, f := range c.flags {
			line := fmt.Sprintf("complete -c lock-reaper %s -l %s", cond, f.name)
			switch {
			case f.file:
				line += " -r -F"
			case len(f.choices) > 0:
				line += fmt.Sprintf(" -x -a '%s'", strings.Join(f.choices, " "))
			case f.value:
				line += " -x"
			}
			fmt.Fprintf(w, "%s -d '%s'\n", line, fishQuoted(f.usage))
		}
		if len(c.args) > 0 {
			fmt.Fprintf(w, "complete -c lock-reaper %s -a '%s'\n", cond, strings.Join(c.args, " "))
		}
	}
}

// zshQuoted is s inside zsh's single quotes.
func zshQuoted(s string) string { return strings.ReplaceAll(s, "'", `'\''`) }

// fishQuoted is s inside fish's single quotes, where \' is a quote.
func fishQuoted(s string) string { return strings.ReplaceAll(s, "'", `\'`) }

func commandNames(cmds []completedCommand) []string {
	out := make([]string, len(cmds))
	for i, c := range cmds {
		out[i] = c.name
	}
	return out
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
