package pgbin

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// server are the programs the demo's throwaway cluster runs.
var server = []string{"initdb", "pg_ctl", "postgres"}

// fakeServer makes dir hold executables named like the server's programs
// (all of them, or those given), which only echo.
func fakeServer(t *testing.T, dir string, names ...string) string {
	t.Helper()
	if len(names) == 0 {
		names = server
	}
	require.NoError(t, os.MkdirAll(dir, 0o755))
	for _, n := range names {
		require.NoError(t, os.WriteFile(filepath.Join(dir, n), []byte("#!/bin/sh\necho "+n+"\n"), 0o755))
	}
	return dir
}

// The lookup is tried with PATH holding nothing but the test's fakes, and
// the usual places under the test's own directory.
func TestFindPostgres(t *testing.T) {
	t.Run("on PATH first", func(t *testing.T) {
		root := t.TempDir()
		onPath := fakeServer(t, filepath.Join(root, "path"))
		fakeServer(t, filepath.Join(root, "lib/postgresql/17/bin"))
		t.Setenv("PATH", onPath)
		dir, err := Find([]string{filepath.Join(root, "lib/postgresql/*/bin")}, server...)
		require.NoError(t, err)
		require.Equal(t, onPath, dir)
	})
	t.Run("a link on PATH to the server's directory", func(t *testing.T) {
		root := t.TempDir()
		srv := fakeServer(t, filepath.Join(root, "lib/postgresql/15/bin"))
		onPath := filepath.Join(root, "path")
		require.NoError(t, os.Mkdir(onPath, 0o755))
		require.NoError(t, os.Symlink(filepath.Join(srv, "initdb"), filepath.Join(onPath, "initdb")))
		t.Setenv("PATH", onPath)
		dir, err := Find(nil, server...)
		require.NoError(t, err)
		require.Equal(t, srv, dir)
	})
	t.Run("the usual places, newest version first, complete ones only", func(t *testing.T) {
		root := t.TempDir()
		fakeServer(t, filepath.Join(root, "lib/postgresql/9/bin"))
		fakeServer(t, filepath.Join(root, "lib/postgresql/15/bin"))
		fakeServer(t, filepath.Join(root, "lib/postgresql/17/bin"), "initdb", "pg_ctl") // a client-only install, say
		fakeServer(t, filepath.Join(root, "pgsql-16/bin"))
		t.Setenv("PATH", t.TempDir())
		dir, err := Find([]string{filepath.Join(root, "lib/postgresql/*/bin"), filepath.Join(root, "pgsql-*/bin")}, server...)
		require.NoError(t, err)
		require.Equal(t, filepath.Join(root, "lib/postgresql/15/bin"), dir, "Debian's place before RHEL's, 15 before 9, 17 lacks postgres")

		dir, err = Find([]string{filepath.Join(root, "none/*/bin"), filepath.Join(root, "pgsql-*/bin")}, server...)
		require.NoError(t, err)
		require.Equal(t, filepath.Join(root, "pgsql-16/bin"), dir)
	})
	t.Run("pg_config --bindir", func(t *testing.T) {
		root := t.TempDir()
		srv := fakeServer(t, filepath.Join(root, "Cellar/postgresql@17/17.2/bin"))
		onPath := filepath.Join(root, "path")
		require.NoError(t, os.Mkdir(onPath, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(onPath, "pg_config"), []byte("#!/bin/sh\necho "+srv+"\n"), 0o755))
		t.Setenv("PATH", onPath)
		dir, err := Find([]string{filepath.Join(root, "none/*/bin")}, server...)
		require.NoError(t, err)
		require.Equal(t, srv, dir)
	})
	t.Run("absent: where it looked and what to install", func(t *testing.T) {
		t.Setenv("PATH", t.TempDir())
		_, err := Find([]string{"/nonexistent/postgresql/*/bin"}, server...)
		require.Error(t, err)
		for _, want := range []string{"initdb, pg_ctl, postgres", "on PATH", "/nonexistent/postgresql/*/bin", "pg_config --bindir",
			"apt-get install postgresql", "dnf install postgresql-server", "brew install postgresql"} {
			require.Contains(t, err.Error(), want)
		}
	})
}

// A standby's programs include pg_basebackup: a directory without it is
// passed over for one with all of them, of one version.
func TestFindEveryProgramInOneDirectory(t *testing.T) {
	root := t.TempDir()
	fakeServer(t, filepath.Join(root, "lib/postgresql/17/bin"))
	fakeServer(t, filepath.Join(root, "lib/postgresql/15/bin"), append(server, "pg_basebackup")...)
	t.Setenv("PATH", t.TempDir())
	dir, err := Find([]string{filepath.Join(root, "lib/postgresql/*/bin")}, append(server, "pg_basebackup")...)
	require.NoError(t, err)
	require.Equal(t, filepath.Join(root, "lib/postgresql/15/bin"), dir)
}

func TestCompareVersions(t *testing.T) {
	t.Parallel()
	require.Negative(t, compareVersions("/usr/lib/postgresql/9/bin", "/usr/lib/postgresql/16/bin"))
	require.Positive(t, compareVersions("/opt/homebrew/opt/postgresql@17/bin", "/opt/homebrew/opt/postgresql@16/bin"))
	require.Zero(t, compareVersions("/usr/pgsql-15/bin", "/usr/pgsql-15/bin"))
}
