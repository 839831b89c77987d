package reaper

import (
	"errors"
)

// The systems a pass talks to, as an error names them.
const (
	SystemRedis    = "Redis"
	SystemDatabase = "PostgreSQL"
)

// StepError names the step of a pass that failed and the system it was
// talking to, so that the error says what was being done and where: a
// standby refusing writes is no failure to read Redis, nor is a stop during
// the release. Its text is the wrapped error's; the step is for whoever puts
// it in an operator's words.
type StepError struct {
	// Step says what was being done, ending in the preposition before the
	// system: "reading Pulp's locks from", "releasing locks in".
	Step   string
	System string
	Err    error
}

func (e *StepError) Error() string { return e.Err.Error() }

func (e *StepError) Unwrap() error { return e.Err }

// Activity is the step with its system: "releasing locks in Redis".
func (e *StepError) Activity() string { return e.Step + " " + e.System }

// inStep wraps err, unless nil or already named by a step deeper down.
func inStep(step, system string, err error) error {
	var se *StepError
	if err == nil || errors.As(err, &se) {
		return err
	}
	return &StepError{Step: step, System: system, Err: err}
}

// errNoSnapshot fails a pass whose database read did not complete: with no
// snapshot there is nothing to judge, so nothing is written. (A skipped pass,
// another reaper holding the lock, is no error: its report has Skipped set.)
var errNoSnapshot = errors.New("no database snapshot, no writes")
