package browser

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// scripts/browser-test.sh, which `make test` runs, installs the packages
// with npm ci only when they are missing or older than the lock file, and
// ends `make test` with a banner naming what keeps this test from running.
// It runs on a copy of the script beside a folder of its own, with a PATH of
// stand-ins for node and npm.
func TestSetupScript(t *testing.T) {
	root := t.TempDir()
	script := filepath.Join(root, "scripts", "browser-test.sh")
	folder := filepath.Join(root, "e2e", "browser")
	body, err := os.ReadFile("../../scripts/browser-test.sh")
	require.NoError(t, err)
	writeFile(t, script, string(body), 0o755)
	writeFile(t, filepath.Join(folder, "package.json"), "{}", 0o644)
	writeFile(t, filepath.Join(folder, "package-lock.json"), "{}", 0o644)
	bin := filepath.Join(root, "bin")
	for _, program := range []string{"bash", "dirname"} {
		path, err := exec.LookPath(program)
		require.NoError(t, err)
		require.NoError(t, os.MkdirAll(bin, 0o755))
		require.NoError(t, os.Symlink(path, filepath.Join(bin, program)))
	}
	chromium := filepath.Join(root, "chromium")
	npmLog := filepath.Join(root, "npm.log")

	runErr := func(mode string, env ...string) (string, error) {
		cmd := exec.Command(script, mode)
		cmd.Env = append([]string{"PATH=" + bin, "CHROMIUM=" + chromium}, env...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	run := func(mode string, env ...string) string {
		t.Helper()
		out, err := runErr(mode, env...)
		require.NoError(t, err, "%s %s:\n%s", script, mode, out)
		return out
	}
	skipped := "SKIPPED: the browser test (e2e/browser) did not run: "

	require.Contains(t, run("report"), skipped+"node not found; install nodejs and npm")
	require.Contains(t, run("report", "CI=true"), "FAILED: the browser test (e2e/browser) could not run: node not found")
	writeFile(t, filepath.Join(bin, "node"), "#!/bin/sh\n", 0o755)
	require.Contains(t, run("report"), skipped+chromium+" not found; install chromium")
	writeFile(t, chromium, "", 0o755)
	require.Empty(t, run("prepare"), "without npm, nothing to prepare")
	require.Contains(t, run("report"), skipped+"npm not found; install npm")

	// npm ci fails (offline, say): locally the banner says so, under CI make test stops.
	writeFile(t, filepath.Join(bin, "npm"), "#!/bin/sh\nexit 1\n", 0o755)
	require.Contains(t, run("prepare"), "npm ci failed")
	require.Contains(t, run("report"), skipped+"its npm packages are not installed")
	out, err := runErr("prepare", "CI=true")
	require.Error(t, err, "under CI a failed npm ci fails:\n%s", out)

	// npm's stand-in installs the packages and the stamp npm ci writes.
	writeFile(t, filepath.Join(bin, "npm"), `#!/bin/sh
PATH=/usr/bin:/bin
echo "$@" >> `+npmLog+`
mkdir -p node_modules/playwright-core node_modules/axe-core && : > node_modules/.package-lock.json
`, 0o755)
	require.Contains(t, run("prepare"), "npm ci")
	require.Empty(t, run("report"), "everything is there: no banner")
	require.Empty(t, run("prepare"), "up to date: no npm ci")
	later := time.Now().Add(time.Hour)
	require.NoError(t, os.Chtimes(filepath.Join(folder, "package-lock.json"), later, later))
	require.Contains(t, run("prepare"), "npm ci", "a newer lock file is installed again")
	log, err := os.ReadFile(npmLog)
	require.NoError(t, err)
	require.Equal(t, 2, strings.Count(string(log), "ci "), "npm ran twice:\n%s", log)
}

func writeFile(t *testing.T, path, body string, mode os.FileMode) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(body), mode))
}
