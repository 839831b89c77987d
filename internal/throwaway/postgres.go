package throwaway

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

// serverPrograms are the PostgreSQL programs the demo runs, all from one
// directory: initdb makes the cluster, pg_ctl starts and stops postgres.
var serverPrograms = []string{"initdb", "pg_ctl", "postgres"}

// usualPlaces are where packages install the PostgreSQL server off PATH,
// each glob tried newest version first: Debian and Ubuntu
// (/usr/lib/postgresql/<major>/bin), RHEL and the PGDG packages
// (/usr/pgsql-<major>/bin), Homebrew's versioned kegs, which it does not
// link onto PATH (postgresql@<major>, Apple silicon and Intel).
var usualPlaces = []string{
	"/usr/lib/postgresql/*/bin",
	"/usr/pgsql-*/bin",
	"/opt/homebrew/opt/postgresql*/bin",
	"/usr/local/opt/postgresql*/bin",
}

// installHint says how to get the PostgreSQL server on the systems the demo
// is run on.
const installHint = "install the PostgreSQL server: Debian/Ubuntu apt-get install postgresql, " +
	"RHEL/Fedora dnf install postgresql-server, macOS brew install postgresql"

// findPostgres returns the directory holding initdb, pg_ctl and postgres:
// the one of initdb on PATH, then the usual places (newest version first),
// then what pg_config --bindir says. The error names where it looked and
// what to install.
func findPostgres(places []string) (string, error) {
	var candidates []string
	if initdb, err := exec.LookPath("initdb"); err == nil {
		candidates = append(candidates, filepath.Dir(initdb))
		// A link on PATH (/usr/local/bin/initdb, say) to a directory
		// holding all three.
		if real, err := filepath.EvalSymlinks(initdb); err == nil {
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
		if hasPrograms(dir) {
			return dir, nil
		}
	}
	where := append([]string{"on PATH"}, places...)
	return "", fmt.Errorf("PostgreSQL server programs (%s) not found %s, nor in pg_config --bindir: %s",
		strings.Join(serverPrograms, ", "), strings.Join(where, ", in "), installHint)
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

func hasPrograms(dir string) bool {
	for _, name := range serverPrograms {
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
