package testenv

import (
	"context"
	"fmt"
	"regexp"

	"github.com/jackc/pgx/v5"
)

// Leftovers is what DropLeftovers found.
type Leftovers struct {
	// Dropped are the schema templates (when no test process was present)
	// and the test databases whose process is gone.
	Dropped []string
	// Unowned are test databases named before names carried their
	// process's key: nothing tells whether their maker still runs, so they
	// are left for a person to drop once no test runs.
	Unowned []string
}

var (
	templatePattern       = regexp.MustCompile(`^lr_template_[0-9a-f]{12}(_building)?$`)
	unownedNamePattern    = regexp.MustCompile(`^lr_test_[0-9a-f]{12}$`)
	leftoverCandidatesSQL = `SELECT datname FROM pg_database
		WHERE (datname LIKE 'lr\_test\_%' OR datname LIKE 'lr\_template\_%') AND datname <> current_database()
		ORDER BY datname`
	presentKeysSQL = `SELECT objid::int8 FROM pg_locks
		WHERE locktype = 'advisory' AND classid = $1::int4 AND objsubid = 2 AND granted`
)

// DropLeftovers drops, on the server of adminURL, what the tests made and
// could not remove themselves, and nothing else:
//
//   - the test databases (lr_test_<key>_<random>) of test processes that are
//     gone: no session holds their presence lock (presence.go);
//   - the schema templates (lr_template_<hash>), when no test process is
//     present at all: a test process that comes later makes the template
//     again. With test processes present it leaves them, for the last
//     `make test` to drop.
//
// It holds the lock under which tests make the template and copy it, so
// that no test copies a template it drops, and no database made under a
// presence lock taken after it read the present keys appears meanwhile.
// Any other database, whatever its name, is left alone.
func DropLeftovers(ctx context.Context, adminURL string) (Leftovers, error) {
	var l Leftovers
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return l, fmt.Errorf("connect to the test postgres: %w", err)
	}
	defer conn.Close(ctx)
	err = withAdvisoryLock(ctx, conn, func() error {
		present, err := presentKeys(ctx, conn)
		if err != nil {
			return err
		}
		names, err := queryAll[string](ctx, conn, leftoverCandidatesSQL)
		if err != nil {
			return fmt.Errorf("list the databases: %w", err)
		}
		for _, name := range names {
			key, owned := makerKey(name)
			switch {
			case templatePattern.MatchString(name) && len(present) == 0,
				owned && !present[key]:
				if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
					return fmt.Errorf("drop database %s: %w", name, err)
				}
				l.Dropped = append(l.Dropped, name)
			case unownedNamePattern.MatchString(name):
				l.Unowned = append(l.Unowned, name)
			}
		}
		return nil
	})
	return l, err
}

// presentKeys are the keys of the test processes present on the server.
func presentKeys(ctx context.Context, conn *pgx.Conn) (map[uint32]bool, error) {
	keys, err := queryAll[int64](ctx, conn, presentKeysSQL, int32(presenceClass))
	if err != nil {
		return nil, fmt.Errorf("read the test processes' presence locks (pg_locks): %w", err)
	}
	present := make(map[uint32]bool, len(keys))
	for _, k := range keys {
		present[uint32(k)] = true
	}
	return present, nil
}

// queryAll is the single column of every row of sql.
func queryAll[T any](ctx context.Context, conn *pgx.Conn, sql string, args ...any) ([]T, error) {
	rows, err := conn.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[T])
}
