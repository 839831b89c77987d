package testenv

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/internal/pgcluster"
)

// DropLeftovers drops the databases of test processes that are gone, and
// the templates once no test process is present, and nothing else. It runs
// on a throwaway server of its own: on the shared test server it would act
// on other test runs' databases.
func TestDropLeftoversDropsOnlyWhatTheGoneTestsLeft(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	server := pgcluster.StartPrimary(t)
	admin := server.URL("postgres")

	live, liveKey, err := holdPresence(ctx, admin)
	require.NoError(t, err)
	defer live.Close(ctx)
	gone, goneKey, err := holdPresence(ctx, admin)
	require.NoError(t, err)
	require.NotEqual(t, liveKey, goneKey, "two processes got one key")

	liveDB, goneDB := testDatabaseName(liveKey), testDatabaseName(goneKey)
	template, building := "lr_template_0123456789ab", "lr_template_0123456789ab_building"
	unowned := "lr_test_0123456789ab"
	others := []string{"app", "lr_testing", "lr_test_keep", "lr_template_mine", "lr_test_0123abcd_notrandom"}
	for _, name := range append([]string{liveDB, goneDB, template, building, unowned}, others...) {
		server.Exec(t, "postgres", "CREATE DATABASE "+pgx.Identifier{name}.Sanitize())
	}
	// The killed process's session still in its database: the drop ends it.
	stray, err := pgx.Connect(ctx, server.URL(goneDB))
	require.NoError(t, err)
	defer stray.Close(ctx)

	// The second process dies: its presence lock ends with its session.
	require.NoError(t, gone.Close(ctx))
	require.Eventually(t, func() bool {
		present, err := presentKeys(ctx, live)
		return err == nil && present[liveKey] && !present[goneKey]
	}, 10*time.Second, 50*time.Millisecond, "the gone process's presence lock ends")

	l, err := DropLeftovers(ctx, admin)
	require.NoError(t, err)
	require.Equal(t, []string{goneDB}, l.Dropped, "a test process is present: only the gone one's database goes, the templates stay")
	require.Equal(t, []string{unowned}, l.Unowned)
	require.ElementsMatch(t, append([]string{liveDB, template, building, unowned}, others...), userDatabases(t, live))

	// The last test process ends: its database and the templates go.
	require.NoError(t, live.Close(ctx))
	check, err := pgx.Connect(ctx, admin)
	require.NoError(t, err)
	defer check.Close(ctx)
	require.Eventually(t, func() bool {
		present, err := presentKeys(ctx, check)
		return err == nil && len(present) == 0
	}, 10*time.Second, 50*time.Millisecond, "no test process is present")
	l, err = DropLeftovers(ctx, admin)
	require.NoError(t, err)
	require.ElementsMatch(t, []string{liveDB, template, building}, l.Dropped)
	require.ElementsMatch(t, append([]string{unowned}, others...), userDatabases(t, check))
}

// A test database's name carries its process's key, whose presence lock
// the process holds on the test server while it lives.
func TestTestDatabaseNamesTheirLiveProcess(t *testing.T) {
	t.Parallel()
	db := NewDatabase(t)
	key, ok := makerKey(db.Name)
	require.True(t, ok, "%s carries no process key", db.Name)
	conn, err := pgx.Connect(context.Background(), DatabaseURL())
	require.NoError(t, err)
	defer conn.Close(context.Background())
	present, err := presentKeys(context.Background(), conn)
	require.NoError(t, err)
	require.True(t, present[key], "%s: no presence lock on key %08x", db.Name, key)
}

func TestMakerKey(t *testing.T) {
	for name, want := range map[string]any{
		"lr_test_0000002a_0123456789ab":   uint32(42),
		"lr_test_7fffffff_0123456789ab":   uint32(0x7fffffff),
		"lr_test_0123456789ab":            false, // named before keys
		"lr_test_0000002a_0123":           false,
		"lr_test_0000002A_0123456789ab":   false,
		"x_lr_test_0000002a_0123456789ab": false,
		"lr_template_0123456789ab":        false,
	} {
		key, ok := makerKey(name)
		if want == false {
			require.False(t, ok, name)
			continue
		}
		require.True(t, ok, name)
		require.Equal(t, want, key, name)
	}
	name := testDatabaseName(0x1234abcd)
	key, ok := makerKey(name)
	require.True(t, ok && key == 0x1234abcd, "%s: %x %v", name, key, ok)
	require.Less(t, randomKey(), uint32(1)<<31)
}

// userDatabases are the server's databases but the ones initdb makes.
func userDatabases(t *testing.T, conn *pgx.Conn) []string {
	t.Helper()
	names, err := queryAll[string](context.Background(), conn,
		"SELECT datname FROM pg_database WHERE datname NOT IN ('postgres', 'template0', 'template1')")
	require.NoError(t, err)
	slices.Sort(names)
	return names
}
