package config

import (
	"fmt"

	"github.com/lock-reaper/lock-reaper/pass"
)

// A setting that is a field of pass.Config is bound to that field as well
// as to its own: the reaper's constants are then its only default
// (pass.DefaultConfig), and Reaper copies it over without a hand-written
// list of fields.

// reaperBinding ties a setting to a field of pass.Config.
type reaperBinding struct {
	// def is the reaper's default of the field, in the setting's textual form.
	def string
	// copyTo copies the setting's value from a Config into a pass.Config.
	copyTo func(c *Config, rc *pass.Config)
}

// bindReaper is bind for a setting that the reaper reads: target names the
// pass.Config field, whose value in pass.DefaultConfig becomes the
// setting's default.
func bindReaper[T any](cd codec[T], field func(*Config) *T, target func(*pass.Config) *T, checks ...func(T) error) binding {
	b := bind(cd, field, checks...)
	def := pass.DefaultConfig()
	b.reaper = &reaperBinding{
		def:    cd.format(*target(&def)),
		copyTo: func(c *Config, rc *pass.Config) { *target(rc) = *field(c) },
	}
	return b
}

// withReaperDefaults fills the default of every setting bound to the reaper
// from the reaper's own. A row that also wrote a default of its own would be
// a second source that could drift: that is a bug, caught at start.
func withReaperDefaults(table []setting) []setting {
	for i := range table {
		s := &table[i]
		if s.reaper == nil {
			continue
		}
		if s.def != "" {
			panic(fmt.Sprintf("config: %s has a default of its own besides the reaper's", s.key))
		}
		s.def = s.reaper.def
	}
	return table
}

// Reaper returns the reaper's configuration: pass.DefaultConfig with every
// setting bound to a reaper field copied over. Force is not a setting (it is
// a flag of the commands that allow it), so it stays false.
func (c Config) Reaper() pass.Config {
	rc := pass.DefaultConfig()
	for i := range settings {
		if r := settings[i].reaper; r != nil {
			r.copyTo(&c, &rc)
		}
	}
	return rc
}
