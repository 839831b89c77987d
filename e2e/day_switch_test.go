package e2e

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// readOnlySwitch makes the database read-only for the connections of the
// pools it prepares, as a failover's demoted primary or a read-only window
// would, without touching the server's configuration: each connection sets
// its own session's default_transaction_read_only when it is next acquired
// after a switch, so that writes fail with SQLSTATE 25006 for real.
type readOnlySwitch struct {
	readOnly atomic.Bool
	gen      atomic.Int64
	applied  sync.Map // *pgx.Conn -> the gen it applied
}

func (s *readOnlySwitch) set(on bool) {
	s.readOnly.Store(on)
	s.gen.Add(1)
}

// prepare is a pgxpool PrepareConn hook.
func (s *readOnlySwitch) prepare(ctx context.Context, conn *pgx.Conn) (bool, error) {
	g := s.gen.Load()
	if v, ok := s.applied.Load(conn); ok && v.(int64) == g {
		return true, nil
	}
	mode := "off"
	if s.readOnly.Load() {
		mode = "on"
	}
	if _, err := conn.Exec(ctx, "SET SESSION default_transaction_read_only = "+mode); err != nil {
		return false, err
	}
	s.applied.Store(conn, g)
	return true, nil
}

// pool is newPool with the switch's hook.
func (s *readOnlySwitch) pool(ctx context.Context, url string, maxConns int32) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, err
	}
	cfg.MaxConns = maxConns
	cfg.PrepareConn = s.prepare
	return pgxpool.NewWithConfig(ctx, cfg)
}
