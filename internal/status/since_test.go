package status

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/internal/privilege"
	"github.com/lock-reaper/lock-reaper/internal/sim"
	"github.com/lock-reaper/lock-reaper/reaper"
)

// TestRunningSinceNeedsOnlyTheOptionalGrant: the blocked queue says since
// when a live worker runs the task that keeps a lock a waiting task needs,
// under the documented role; a role granted before started_at was (an
// optional grant) sees the same queue without the time, and no error.
func TestRunningSinceNeedsOnlyTheOptionalGrant(t *testing.T) {
	spec := sim.SmallIncident()
	spec.QueuedDomainExclusive = 1
	f := newFixture(t, spec)
	var started time.Time
	require.NoError(t, f.db.Pool.QueryRow(context.Background(),
		`SELECT started_at FROM core_task WHERE pulp_id = $1`, f.inc.Running[0]).Scan(&started))

	kept := func(pool *pgxpool.Pool) []Link {
		t.Helper()
		r, err := reaper.New(passConfig(), f.rdb.Client, pool, nil)
		require.NoError(t, err)
		in, err := r.Inspect(context.Background(), reaper.InspectOptions{})
		require.NoError(t, err)
		s := New(r, Options{})
		s.Publish(context.Background(), in, 0, time.Time{})
		var out []Link
		for _, q := range s.View().Queue {
			for _, l := range q.Chain {
				if l.keptForTask() == f.inc.Running[0] {
					out = append(out, l)
				}
			}
		}
		require.NotEmpty(t, out, "the domain-exclusive task waits for the live worker's domain membership")
		return out
	}

	for _, l := range kept(sinceRole(t, f, "")) {
		require.True(t, l.Since.Equal(started), "since %s, want %s", l.Since, started)
		require.True(t, strings.HasSuffix(l.Freed, ", running since "+clock(started)), l.Freed)
		require.Contains(t, l.Freed, "never while its owner lives: held by live worker "+f.inc.LiveOwners[0])
	}
	for _, l := range kept(sinceRole(t, f, "REVOKE SELECT (started_at) ON core_task FROM {role}")) {
		require.True(t, l.Since.IsZero())
		require.True(t, strings.HasSuffix(l.Freed, ", running"), l.Freed)
	}

	_, body := f.get("/queue")
	require.NotContains(t, body, "running since", "the fixture's own page has published nothing yet")
	f.srv.Publish(context.Background(), mustInspect(t, f), 0, time.Time{})
	_, body = f.get("/queue")
	require.Contains(t, body, "running since "+clock(started))
}

// sinceRole creates a role with the documented grants, adjusted by one
// statement ({role} names it) unless empty, and returns a pool logged in as
// it; the role is dropped at cleanup.
func sinceRole(t *testing.T, f *fixture, adjust string) *pgxpool.Pool {
	t.Helper()
	ctx := context.Background()
	role := strings.ToLower("lr_status_" + sim.NewUUID()[:8])
	_, err := f.db.Pool.Exec(ctx, privilege.PostgresSQLFor(role, "pw"))
	require.NoError(t, err)
	t.Cleanup(func() {
		_, _ = f.db.Pool.Exec(context.Background(), "DROP OWNED BY "+pgx.Identifier{role}.Sanitize())
		_, _ = f.db.Pool.Exec(context.Background(), "DROP ROLE IF EXISTS "+pgx.Identifier{role}.Sanitize())
	})
	if adjust != "" {
		_, err := f.db.Pool.Exec(ctx, strings.ReplaceAll(adjust, "{role}", pgx.Identifier{role}.Sanitize()))
		require.NoError(t, err)
	}
	u, err := url.Parse(f.db.URL)
	require.NoError(t, err)
	u.User = url.UserPassword(role, "pw")
	pool, err := pgxpool.New(ctx, u.String())
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return pool
}

func mustInspect(t *testing.T, f *fixture) *reaper.Inspection {
	t.Helper()
	in, err := f.r.Inspect(context.Background(), reaper.InspectOptions{})
	require.NoError(t, err)
	return in
}
