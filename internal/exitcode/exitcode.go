// Package exitcode is the command line's vocabulary of process exit codes:
// what a pass's report or doctor's checks mean to a shell, a CronJob or an
// alert. The reaper reports what it found and did; only the commands turn
// that into a number.
package exitcode

import (
	"github.com/lock-reaper/lock-reaper/internal/doctor"
	"github.com/lock-reaper/lock-reaper/reaper"
)

// The exit codes every command documents.
const (
	// OK: the command did what it was asked, and nothing needs attention.
	OK = 0
	// Failed: the command could not complete (a pass failed, a doctor check
	// failed).
	Failed = 1
	// Usage: the command line or the configuration is wrong.
	Usage = 2
	// Findings: an audit found what a real pass would release or update.
	Findings = 3
	// Warnings: doctor's checks passed with warnings (the same number as
	// Findings: something wants a look, nothing is broken).
	Warnings = 3
	// Guarded: a guard held work back (the mass-death guard, a limit per
	// pass, a database that does not take writes), or Redis's primary
	// changed under the pass (some of its writes may be lost).
	Guarded = 4
)

// Of is the exit code for a pass's report: Failed when the pass failed,
// OK when it was skipped (another reaper held the lock), Guarded when a
// guard held work back, and for an audit Findings when a real pass would
// release a lock or update a task (findings that need confirmation count).
func Of(r *reaper.Report) int {
	switch {
	case r.Error != "":
		return Failed
	case r.Skipped != "":
		return OK
	case len(r.Guards) > 0:
		return Guarded
	case r.Mode == reaper.ModeAudit && r.WouldAct():
		return Findings
	default:
		return OK
	}
}

// OfDoctor is the exit code for doctor's checks: OK when every check is ok,
// Warnings with warnings only, Failed with a failure.
func OfDoctor(r doctor.Report) int {
	switch r.Status {
	case doctor.Fail:
		return Failed
	case doctor.Warn:
		return Warnings
	}
	return OK
}
