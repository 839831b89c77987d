// Package pulpschema carries the part of pulpcore's PostgreSQL schema that
// lock-reaper reads and writes. Tests, the demo and the benchmark load it into
// throwaway databases; the reaper itself never creates tables.
package pulpschema

import _ "embed"

// SQL creates core_domain, core_appstatus, core_taskgroup, core_task and
// core_progressreport with pulpcore's column names and types.
//
//go:embed pulp-schema.sql
var SQL string
