package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/internal/exitcode"
)

// Every shell's script is made, names the program and asks it what to
// complete (cobra's __complete), and parses in its shell where installed
// (bash always is).
func TestCompletionScriptsParse(t *testing.T) {
	t.Parallel()
	for _, shell := range []string{"bash", "zsh", "fish", "powershell"} {
		code, script, stderr := run(t, nil, "completion", shell)
		require.Equal(t, exitcode.OK, code, stderr)
		require.Contains(t, script, "lock-reaper", shell)
		require.Contains(t, script, "__complete", shell)
		binary := map[string]string{"powershell": "pwsh"}[shell]
		if binary == "" {
			binary = shell
		}
		path, err := exec.LookPath(binary)
		if err != nil {
			if shell == "bash" {
				t.Fatalf("bash not found: %v", err)
			}
			t.Logf("%s not installed: its script's syntax is not checked", shell)
			continue
		}
		file := filepath.Join(t.TempDir(), "completion."+shell)
		require.NoError(t, os.WriteFile(file, []byte(script), 0o644))
		check := exec.Command(path, "-n", file)
		if shell == "powershell" {
			check = exec.Command(path, "-NoProfile", "-Command", "$null = [ScriptBlock]::Create((Get-Content -Raw '"+file+"'))")
		}
		out, err := check.CombinedOutput()
		require.NoError(t, err, "%s: %s", shell, out)
	}
	code, _, stderr := run(t, nil, "completion", "tcsh")
	require.Equal(t, exitcode.Usage, code)
	require.Contains(t, stderr, `no script for "tcsh": name bash, zsh, fish or powershell`)
	code, _, stderr = run(t, nil, "completion")
	require.Equal(t, exitcode.Usage, code)
	require.Contains(t, stderr, "missing SHELL")
}

// What every script offers is what the binary answers to __complete:
// commands, the flags of the command typed (only those it binds), a
// setting's fixed values, the shells.
func TestCompletionCompletes(t *testing.T) {
	t.Parallel()
	complete := func(words ...string) []string {
		t.Helper()
		code, out, stderr := run(t, nil, append([]string{"__complete"}, words...)...)
		require.Equal(t, exitcode.OK, code, stderr)
		var offered []string
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			if strings.HasPrefix(line, ":") {
				continue // the directive
			}
			name, _, _ := strings.Cut(line, "\t")
			offered = append(offered, name)
		}
		return offered
	}
	all := complete("")
	for _, c := range commands() {
		require.Contains(t, all, c.name)
	}
	require.Equal(t, []string{"release", "run"}, complete("r"))
	require.Equal(t, []string{"--dry-run"}, complete("once", "--dr"))
	require.Empty(t, complete("audit", "--dr"), "audit has no --dry-run")
	require.Equal(t, []string{"--schedule"}, complete("run", "--sche"))
	require.Empty(t, complete("audit", "--sche"), "a setting audit does not use")
	require.Equal(t, []string{"json", "json-pretty"}, complete("locks", "--output", "js"))
	require.Equal(t, []string{"canceled", "failed"}, complete("once", "--lost-running", ""))
	require.Contains(t, complete("locks", "--verdict", ""), "owner-dead")
	require.Equal(t, []string{"zsh"}, complete("completion", "z"))
	require.Equal(t, []string{"powershell"}, complete("completion", "p"))
	require.Equal(t, []string{"once"}, complete("help", "on"))
}

// The bash script completes as bash runs it, asking the built binary on
// the PATH. bash-completion's _get_comp_words_by_ref, which the script
// needs, is stood in for by its plain case (no word breaks to join).
func TestBashCompletionCompletes(t *testing.T) {
	t.Parallel()
	bin := sgBuild(t)
	_, script, _ := run(t, nil, "completion", "bash")
	file := filepath.Join(t.TempDir(), "lock-reaper.bash")
	require.NoError(t, os.WriteFile(file, []byte(script), 0o644))
	complete := func(words ...string) []string {
		t.Helper()
		quoted := make([]string, len(words))
		for i, w := range words {
			quoted[i] = "'" + w + "'"
		}
		prog := `_get_comp_words_by_ref() { cur=${COMP_WORDS[COMP_CWORD]}; prev=${COMP_WORDS[COMP_CWORD-1]}; words=("${COMP_WORDS[@]}"); cword=$COMP_CWORD; }
source ` + file + `
COMP_WORDS=(lock-reaper ` + strings.Join(quoted, " ") + `)
COMP_CWORD=` + strconv.Itoa(len(words)) + `
__start_lock-reaper
printf '%s\n' "${COMPREPLY[@]}"
`
		cmd := exec.Command("bash", "--norc", "-c", prog)
		cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"))
		// Only stdout: outside a real completion bash's compopt complains on stderr.
		out, err := cmd.Output()
		require.NoError(t, err, "%s", out)
		var offered []string
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if name := strings.TrimSpace(strings.SplitN(line, " ", 2)[0]); name != "" {
				offered = append(offered, name)
			}
		}
		return offered
	}
	require.Equal(t, []string{"release", "run"}, complete("r"))
	require.Equal(t, []string{"--dry-run"}, complete("once", "--dr"))
	require.Empty(t, complete("audit", "--dr"), "audit has no --dry-run")
	require.Equal(t, []string{"json", "json-pretty"}, complete("locks", "--output", "js"))
	require.Equal(t, []string{"zsh"}, complete("completion", "z"))
}
