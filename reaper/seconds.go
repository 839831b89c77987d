package reaper

import (
	"fmt"
	"github.com/lock-reaper/lock-reaper/internal/humantext"
	"strconv"
	"time"

	"github.com/lock-reaper/lock-reaper/reaper/judge"
)

// Seconds is an age as JSON writes it: seconds, to the millisecond.
type Seconds time.Duration

// SecondsOf is d in JSON's form, the same value: the evidence of one owner's
// holdings shares one age, and so do their lines.
func SecondsOf(d *judge.Duration) *Seconds { return (*Seconds)(d) }

// judged is s in the judge's form, the same value.
func (s *Seconds) judged() *judge.Duration { return (*judge.Duration)(s) }

// String rounds to what a reader needs: milliseconds under a second, tenths
// under a minute, whole seconds above.
func (s Seconds) String() string { return humantext.Short(time.Duration(s)) }

// MarshalJSON renders seconds with millisecond precision.
func (s Seconds) MarshalJSON() ([]byte, error) {
	return []byte(strconv.FormatFloat(time.Duration(s).Seconds(), 'f', 3, 64)), nil
}

// UnmarshalJSON reads the seconds MarshalJSON wrote.
func (s *Seconds) UnmarshalJSON(b []byte) error {
	secs, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		return fmt.Errorf("a duration in seconds: %w", err)
	}
	*s = Seconds(secs * float64(time.Second))
	return nil
}
