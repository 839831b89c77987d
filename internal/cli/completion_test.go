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

// Every script parses in its shell and names every command; zsh and fish
// are tried where installed (bash always is).
func TestCompletionScriptsParse(t *testing.T) {
	t.Parallel()
	for _, shell := range []string{"bash", "zsh", "fish"} {
		code, script, stderr := run(t, nil, "completion", shell)
		require.Equal(t, exitcode.OK, code, stderr)
		for name := range commands {
			require.Contains(t, script, name, "%s: the %s command", shell, name)
		}
		require.Contains(t, script, "dry-run", shell)
		path, err := exec.LookPath(shell)
		if err != nil {
			if shell == "bash" {
				t.Fatalf("bash not found: %v", err)
			}
			t.Logf("%s not installed: its script's syntax is not checked", shell)
			continue
		}
		file := filepath.Join(t.TempDir(), "completion."+shell)
		require.NoError(t, os.WriteFile(file, []byte(script), 0o644))
		out, err := exec.Command(path, "-n", file).CombinedOutput()
		require.NoError(t, err, "%s -n: %s", shell, out)
		if shell == "fish" {
			out, err = exec.Command(path, "--no-config", "-c", "source "+file+"; complete -C 'lock-reaper once --dr'").CombinedOutput()
			require.NoError(t, err, "%s", out)
			require.True(t, strings.HasPrefix(string(out), "--dry-run\t"), "fish completes once --dr: %q", out)
		}
	}
	code, _, stderr := run(t, nil, "completion", "powershell")
	require.Equal(t, exitcode.Usage, code)
	require.Contains(t, stderr, `no script for "powershell": name bash, zsh or fish`)
	code, _, stderr = run(t, nil, "completion")
	require.Equal(t, exitcode.Usage, code)
	require.Contains(t, stderr, "missing SHELL")
}

// The bash script completes as bash runs it: commands, the flags of the
// command typed (only those it accepts), a setting's values, the shells.
func TestBashCompletionCompletes(t *testing.T) {
	t.Parallel()
	_, script, _ := run(t, nil, "completion", "bash")
	file := filepath.Join(t.TempDir(), "lock-reaper.bash")
	require.NoError(t, os.WriteFile(file, []byte(script), 0o644))
	complete := func(words ...string) []string {
		t.Helper()
		quoted := make([]string, len(words))
		for i, w := range words {
			quoted[i] = "'" + w + "'"
		}
		prog := "source " + file + "\nCOMP_WORDS=(lock-reaper " + strings.Join(quoted, " ") + ")\n" +
			"COMP_CWORD=" + strconv.Itoa(len(words)) + "\n_lock_reaper\nprintf '%s\\n' \"${COMPREPLY[@]}\"\n"
		out, err := exec.Command("bash", "--norc", "-c", prog).CombinedOutput()
		require.NoError(t, err, "%s", out)
		return strings.Fields(string(out))
	}
	require.Equal(t, []string{"release", "run"}, complete("r"))
	require.Equal(t, []string{"--dry-run"}, complete("once", "--dr"))
	require.Empty(t, complete("audit", "--dr"), "audit has no --dry-run")
	require.Equal(t, []string{"--schedule"}, complete("run", "--sche"))
	require.Empty(t, complete("audit", "--sche"), "a setting audit does not use")
	require.Equal(t, []string{"json", "json-pretty"}, complete("locks", "--output", "js"))
	require.Equal(t, []string{"zsh"}, complete("completion", "z"))
}
