package pulpdb

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/lock-reaper/lock-reaper/heartbeat"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
)

// The versions pulpcore compares before a worker runs a task
// (is_compatible): core_appstatus.versions, each row's app label ->
// version, and core_task.versions, what a task needs. Both are hstore
// columns, read as key/value rows with hstore's each() so that no hstore
// decoder is needed. Only claimed waiting tasks are read: the stranded
// verdict is the only reader.

// canReadTaskVersionsSQL says core_task.versions exists and the role may
// read it: the grant is optional, and a failed statement would end the
// snapshot's transaction.
const canReadTaskVersionsSQL = `SELECT coalesce((SELECT has_column_privilege('core_task'::regclass, attnum, 'SELECT')
  FROM pg_attribute WHERE attrelid = 'core_task'::regclass AND attname = 'versions' AND NOT attisdropped), false)`

const (
	readRowVersionsSQL = `SELECT a.pulp_id::text, e.key, coalesce(e.value, '') FROM core_appstatus a, each(a.versions) e`
	// Only the claims a stranded verdict can judge: waiting and claimed.
	readTaskVersionsSQL = `SELECT t.pulp_id::text, e.key, coalesce(e.value, '') FROM core_task t, each(t.versions) e
WHERE t.state = 'waiting' AND t.app_lock_id IS NOT NULL`
)

// readVersions adds the rows' and the claimed waiting tasks' versions to
// the snapshot's (a NULL version is "", which never parses), and says whether it could: false, with no error, when
// the role lacks the optional grant on core_task.versions.
func readVersions(ctx context.Context, tx pgx.Tx, rows []heartbeat.AppStatus, tasks map[string]judge.Task) (bool, error) {
	var can bool
	if err := tx.QueryRow(ctx, canReadTaskVersionsSQL).Scan(&can); err != nil {
		return false, fmt.Errorf("check the grant on core_task.versions: %w", err)
	}
	if !can {
		return false, nil
	}
	byRow, err := readLabelled(ctx, tx, readRowVersionsSQL)
	if err != nil {
		return false, fmt.Errorf("read core_appstatus.versions: %w", err)
	}
	for i := range rows {
		rows[i].Versions = byRow[rows[i].ID]
	}
	byTask, err := readLabelled(ctx, tx, readTaskVersionsSQL)
	if err != nil {
		return false, fmt.Errorf("read core_task.versions: %w", err)
	}
	for id, v := range byTask {
		if t, ok := tasks[id]; ok {
			t.Versions = v
			tasks[id] = t
		}
	}
	return true, nil
}

// readLabelled reads (id, label, version) rows into a map per id.
func readLabelled(ctx context.Context, tx pgx.Tx, sql string) (map[string]map[string]string, error) {
	rows, err := tx.Query(ctx, sql)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]map[string]string{}
	for rows.Next() {
		var id, label, version string
		if err := rows.Scan(&id, &label, &version); err != nil {
			return nil, err
		}
		if out[id] == nil {
			out[id] = map[string]string{}
		}
		out[id][label] = version
	}
	return out, rows.Err()
}
