// Package pgbin finds the PostgreSQL server's programs wherever the usual
// packages install them, for the demo's throwaway cluster and the tests'
// standbys alike.
package pgbin

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// UsualPlaces are where packages install the PostgreSQL server off PATH,
// each glob tried newest version first: Debian and Ubuntu
// (/usr/lib/postgresql/<major>/bin), RHEL and the PGDG packages
// (/usr/pgsql-<major>/bin), Homebrew's versioned kegs, which it does not
// link onto PATH (postgresql@<major>, Apple silicon and Intel).
var UsualPlaces = []string{
	"/usr/lib/postgresql/*/bin",
	"/usr/pgsql-*/bin",
	"/opt/homebrew/opt/postgresql*/bin",
	"/usr/local/opt/postgresql*/bin",
}

// InstallHint says how to get the PostgreSQL server on the usual systems.
const InstallHint = "install the PostgreSQL server: Debian/Ubuntu apt-get install postgresql, " +
	"RHEL/Fedora dnf install postgresql-server, macOS brew install postgresql"

// Find returns the directory holding every one of programs: that of the
// first program on PATH (or of what a link there points to), then the
// places (globs, newest version first), then what pg_config --bindir says.
// One directory holds them all, so that they are of one version. The
// error names where it looked and what to install.
func Find(places []string, programs ...string) (string, error) {
	var candidates []string
	if first, err := exec.LookPath(programs[0]); err == nil {
		candidates = append(candidates, filepath.Dir(first))
		if real, err := filepath.EvalSymlinks(first); err == nil {
			candidates = append(candidates, filepath.Dir(real))
		}
	}
	for _, glob := range places {
		dirs, _ := filepath.Glob(glob)
		slices.SortStableFunc(dirs, func(a, b string) int { return compareVersions(b, a) })
		candidates = append(candidates, dirs...)
	}
	if dir, ok := pgConfigBinDir(); ok {
		candidates = append(candidates, dir)
	}
	for _, dir := range candidates {
		if hasPrograms(dir, programs) {
			return dir, nil
		}
	}
	where := append([]string{"on PATH"}, places...)
	return "", fmt.Errorf("PostgreSQL server programs (%s) not found %s, nor in pg_config --bindir: %s",
		strings.Join(programs, ", "), strings.Join(where, ", in "), InstallHint)
}

// pgConfigBinDir asks pg_config on PATH where the server's programs are.
func pgConfigBinDir() (string, bool) {
	pgConfig, err := exec.LookPath("pg_config")
	if err != nil {
		return "", false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, pgConfig, "--bindir").Output()
	if err != nil {
		return "", false
	}
	dir := strings.TrimSpace(string(out))
	return dir, dir != ""
}

func hasPrograms(dir string, programs []string) bool {
	for _, name := range programs {
		info, err := os.Stat(filepath.Join(dir, name))
		if err != nil || info.IsDir() || info.Mode()&0o111 == 0 {
			return false
		}
	}
	return true
}

var digits = regexp.MustCompile(`[0-9]+`)

// compareVersions orders two paths by the numbers in them, as versions:
// /usr/lib/postgresql/9/bin before /usr/lib/postgresql/16/bin.
func compareVersions(a, b string) int {
	na, nb := digits.FindAllString(a, -1), digits.FindAllString(b, -1)
	for i := 0; i < len(na) && i < len(nb); i++ {
		x, _ := strconv.Atoi(na[i])
		y, _ := strconv.Atoi(nb[i])
		if x != y {
			return x - y
		}
	}
	if len(na) != len(nb) {
		return len(na) - len(nb)
	}
	return strings.Compare(a, b)
}
