package explain

import (
	"time"

	"github.com/lock-reaper/lock-reaper/internal/humantext"
	"github.com/lock-reaper/lock-reaper/reaper"
)

// Passes is what the history of passes (reaper/history) says of the
// reapers, as the caller read it: explain reads nothing, so whether a
// reaper passes at all is an input. Without it, an explanation speaks of
// "the next pass", as a reaper that runs passes would.
type Passes struct {
	// Within is how far back the history was read.
	Within reaper.Seconds `json:"within"`
	// Recorded says a reaper recorded a pass within Within.
	Recorded bool `json:"recorded"`
	// Unread says why the history could not be read; then whether a
	// reaper passes is unknown, and nothing is promised of one.
	Unread string `json:"unread,omitempty"`
}

// RecordedWithin is Passes for a history read back within, that holds a
// pass (recorded) or none.
func RecordedWithin(within time.Duration, recorded bool) *Passes {
	return &Passes{Within: reaper.Seconds(within), Recorded: recorded}
}

// ExplainPassing is Explain told what the history of passes holds: when no
// reaper has recorded a pass, the conclusion says what a pass would do,
// never what "the next pass" does, and how to get one.
func ExplainPassing(in *reaper.Inspection, taskID string, p *Passes) Explanation {
	ex := explainer{in: in, fleet: in.Fleet(), id: taskID, passes: p}
	return ex.run()
}

// promised says the history shows a reaper passing, or was not read.
func (x *explainer) promised() bool {
	return x.passes == nil || x.passes.Recorded && x.passes.Unread == ""
}

// nextPass is the subject of what a pass does: "the next pass" only when a
// reaper is known to pass. It notes that the conclusion awaits a pass.
func (x *explainer) nextPass() string {
	x.awaitsPass = true
	if x.promised() {
		return "the next pass"
	}
	return "a reaper's pass, once one runs,"
}

// noPassHint ends a conclusion that awaits a pass no reaper has recorded:
// what to run so that one comes. "" when none is needed.
func (x *explainer) noPassHint() string {
	p := x.passes
	if !x.awaitsPass || p == nil || p.Recorded || p.Unread != "" {
		return ""
	}
	return "; no reaper has recorded a pass in the last " + humantext.Duration(time.Duration(p.Within)) +
		": run `lock-reaper once` or install the chart"
}
