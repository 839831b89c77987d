package pulpdb

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lock-reaper/lock-reaper/reaper/judge"
)

// finishedByReaperSQL lists the tasks a reaper finished (canceled or failed,
// with one of TaskReason's messages for them) within the last $1 seconds, newest first, after
// the cursor ($2, $3) when one is given, at most $4. The cancel signal the
// reaper published for such a task may still live; nothing else in the
// database says which of them had one, and those that had none (a waiting
// task canceled) are as final, so all are listed.
const finishedByReaperSQL = `
SELECT pulp_id::text, finished_at, now()
FROM core_task
WHERE state IN ('canceled', 'failed')
  AND finished_at > now() - make_interval(secs => $1)
  AND error->>'reason' LIKE ANY($5::text[])
  AND ($2::timestamptz IS NULL OR (finished_at, pulp_id) < ($2, $3::uuid))
ORDER BY finished_at DESC, pulp_id DESC
LIMIT $4`

// FinishedTask is a task a reaper finished, and when.
type FinishedTask struct {
	ID         string
	FinishedAt time.Time
}

// ReadFinishedByReaper reads at most limit of the tasks a reaper finished
// within the cancel signal's lifetime (judge.CancelSignalLifetime), newest
// first, after the cursor after ("" for the newest), with the database's
// now and the cursor that goes on after the last one read. A cursor it
// cannot read (a record changed by hand) starts again from the newest: the
// check then does more, never less.
func ReadFinishedByReaper(ctx context.Context, pool *pgxpool.Pool, timeout time.Duration, after string, limit int) (tasks []FinishedTask, now time.Time, next string, err error) {
	var at pgtype.Timestamptz
	var id *string
	if t, u, ok := parseFinishedCursor(after); ok {
		at, id = pgtype.Timestamptz{Time: t, Valid: true}, &u
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	rows, err := pool.Query(ctx, finishedByReaperSQL, judge.CancelSignalLifetime.Seconds(), at, id, limit, reaperReasonLikes)
	if err != nil {
		return nil, time.Time{}, "", fmt.Errorf("read the tasks lock-reaper finished in the last %s (core_task): %w", judge.CancelSignalLifetime, err)
	}
	defer rows.Close()
	for rows.Next() {
		var t FinishedTask
		if err := rows.Scan(&t.ID, &t.FinishedAt, &now); err != nil {
			return nil, time.Time{}, "", fmt.Errorf("read the tasks lock-reaper finished (core_task): %w", err)
		}
		tasks = append(tasks, t)
	}
	if err := rows.Err(); err != nil {
		return nil, time.Time{}, "", fmt.Errorf("read the tasks lock-reaper finished in the last %s (core_task): %w", judge.CancelSignalLifetime, err)
	}
	if len(tasks) > 0 {
		last := tasks[len(tasks)-1]
		next = last.FinishedAt.UTC().Format(time.RFC3339Nano) + " " + last.ID
	}
	return tasks, now, next, nil
}

// parseFinishedCursor reads a cursor ReadFinishedByReaper returned:
// "<RFC 3339 time> <task uuid>".
func parseFinishedCursor(s string) (time.Time, string, bool) {
	at, id, ok := strings.Cut(s, " ")
	t, err := time.Parse(time.RFC3339Nano, at)
	if !ok || err != nil || !judge.IsTaskUUID(id) {
		return time.Time{}, "", false
	}
	return t, id, true
}
