-- The PostgreSQL role lock-reaper runs as. Run as the owner of pulpcore's
-- tables (or a superuser) in pulpcore's database, with a password of your own.
CREATE ROLE lock_reaper LOGIN PASSWORD 'change-me';

-- Where PUBLIC's default privileges were revoked, the role also needs:
--   GRANT CONNECT ON DATABASE pulp TO lock_reaper;
GRANT USAGE ON SCHEMA public TO lock_reaper;

-- Owner liveness: every heartbeat row, read in the snapshot; and the
-- pulpcore versions lock-reaper doctor reports.
GRANT SELECT (pulp_id, name, app_type, ttl, last_heartbeat, versions) ON core_appstatus TO lock_reaper;

-- Tasks: the columns a pass judges, and those the update of a lost task sets
-- (the update reads error and finished_at back when it requeues instead);
-- pulp_created, the order in which workers fetch waiting tasks, for explain
-- and the status page's blocked queue; started_at, whether a task ever
-- started: a canceling task its live worker claimed and never started is
-- canceled (stuck-canceling), which a task canceled while running, whose
-- worker released its locks first, must never be taken for. A role granted
-- before started_at was required only has such a task reported; the status
-- page also shows since when a live worker runs a task another waits for.
GRANT SELECT (pulp_id, name, state, app_lock_id, reserved_resources_record, finished_at, error, pulp_created, started_at) ON core_task TO lock_reaper;
GRANT UPDATE (state, app_lock_id, finished_at, error) ON core_task TO lock_reaper;

-- Optional: the plugin versions a task needs, which pulpcore compares with its
-- worker's (core_appstatus.versions) before running it. Without it a waiting
-- task claimed by a live worker too old for it is judged stuck-claim, not
-- stranded: requeued once confirmed even while no online worker can run it,
-- and its report does not say which versions it waits for.
GRANT SELECT (versions) ON core_task TO lock_reaper; -- optional

-- The running progress reports of a task it finishes take the task's state.
GRANT SELECT (pulp_id, task_id, state) ON core_progressreport TO lock_reaper;
GRANT UPDATE (state) ON core_progressreport TO lock_reaper;

-- Optional: how long another session's transaction has been open
-- (pg_stat_activity), for the hold its uncommitted write to core_task puts on
-- shared memberships. Without it a pass measures from the transaction's first
-- sighting in pg_locks, so the hold lasts up to confirm_after longer. Granting
-- it takes a superuser (or a role with ADMIN OPTION on pg_read_all_stats).
GRANT pg_read_all_stats TO lock_reaper; -- optional

-- Advisory locks (its own pass lock, pulpcore's cleanup lock) need no grant.
