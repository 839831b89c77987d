package reaper

import "github.com/lock-reaper/lock-reaper/reaper/judge"

// StrandedJSON is a stranded task's evidence as JSON writes it: the words
// explain and the status page show, and what they rest on.
type StrandedJSON struct {
	Why        string        `json:"why"`
	Needs      []VersionNeed `json:"needs"`
	Met        []VersionNeed `json:"met,omitempty"`
	Online     int           `json:"online_workers"`
	Compatible int           `json:"compatible_workers"`
}

// VersionNeed is one version a stranded task needs and what its claiming
// worker has of it ("" when it lacks the label).
type VersionNeed struct {
	Label string `json:"label"`
	Least string `json:"least"`
	Has   string `json:"has"`
}

// strandedJSONOf is s in JSON's form; nil stays nil.
func strandedJSONOf(s *judge.Stranded) *StrandedJSON {
	if s == nil {
		return nil
	}
	out := &StrandedJSON{Why: s.String(), Online: s.Online, Compatible: s.Compatible, Needs: make([]VersionNeed, len(s.Needs))}
	for i, n := range s.Needs {
		out.Needs[i] = VersionNeed(n)
	}
	for _, n := range s.Met {
		out.Met = append(out.Met, VersionNeed(n))
	}
	return out
}

// judged is s in the judge's form.
func (s *StrandedJSON) judged() *judge.Stranded {
	if s == nil {
		return nil
	}
	out := &judge.Stranded{Online: s.Online, Compatible: s.Compatible, Needs: make([]judge.VersionNeed, len(s.Needs))}
	for i, n := range s.Needs {
		out.Needs[i] = judge.VersionNeed(n)
	}
	for _, n := range s.Met {
		out.Met = append(out.Met, judge.VersionNeed(n))
	}
	return out
}
