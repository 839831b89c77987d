package testenv

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"regexp"
	"strconv"
	"sync"

	"github.com/jackc/pgx/v5"
)

// A test database's name carries the key of the test process that made it,
// lr_test_<key>_<random>, and that process holds a session advisory lock on
// (presenceClass, key) on the test server for as long as it lives. So the
// server itself knows whether a database's maker still runs, wherever it
// runs: a process killed before its cleanup (a -timeout panic, Ctrl-C, kill)
// loses its connection and with it the lock, and its databases become
// leftovers that DropLeftovers may drop. The lock is taken before the first
// database is made, so no database of a live process ever looks orphaned.

// presenceClass is the first key of the presence locks ("lr_t"), the second
// being the process's key; pg_locks shows them as classid, objid and
// objsubid 2 (the two-int4 form), apart from testenvLockKey (objsubid 1).
const presenceClass = 0x6c725f74

// presence is this process's presence lock, taken once on the first
// NewDatabase. The connection is never closed, and is kept referenced so
// that no finalizer closes it: the lock ends with the process.
var presence struct {
	once sync.Once
	conn *pgx.Conn
	key  uint32
	err  error
}

// processKey is this process's key, its presence lock held on the test server.
func processKey(ctx context.Context) (uint32, error) {
	presence.once.Do(func() {
		presence.conn, presence.key, presence.err = holdPresence(ctx, DatabaseURL())
		if presence.err != nil {
			presence.err = fmt.Errorf("take the test process's presence lock on the test postgres (REAPER_TEST_DATABASE_URL): %w", presence.err)
		}
	})
	return presence.key, presence.err
}

// holdPresence connects to the server of adminURL and takes a presence lock
// on a key no other connection holds, which it returns with the connection
// holding it.
func holdPresence(ctx context.Context, adminURL string) (*pgx.Conn, uint32, error) {
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return nil, 0, err
	}
	for range 10 {
		key := randomKey()
		var got bool
		if err := conn.QueryRow(ctx, "SELECT pg_try_advisory_lock($1::int4, $2::int4)", int32(presenceClass), int32(key)).Scan(&got); err != nil {
			conn.Close(ctx)
			return nil, 0, err
		}
		if got {
			return conn, key, nil
		}
	}
	conn.Close(ctx)
	return nil, 0, fmt.Errorf("every key tried is held by another test process")
}

// randomKey is a key below 2^31, so that it reads the same as an int4 and
// as pg_locks' objid (an oid).
func randomKey() uint32 {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return binary.BigEndian.Uint32(b[:]) >> 1
}

// testDatabaseName is a new test database's name for the process of key.
func testDatabaseName(key uint32) string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return fmt.Sprintf("lr_test_%08x_%s", key, hex.EncodeToString(b))
}

var testDatabasePattern = regexp.MustCompile(`^lr_test_([0-9a-f]{8})_[0-9a-f]{12}$`)

// makerKey is the key of the process that made the test database name, if
// the name has one.
func makerKey(name string) (uint32, bool) {
	m := testDatabasePattern.FindStringSubmatch(name)
	if m == nil {
		return 0, false
	}
	k, err := strconv.ParseUint(m[1], 16, 32)
	return uint32(k), err == nil
}
