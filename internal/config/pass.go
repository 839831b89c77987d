package config

import (
	"errors"

	"github.com/lock-reaper/lock-reaper/reaper"
)

// The settings a pass reads are bound straight onto the fields of
// Config.Pass, a reaper.Config: reaper.DefaultConfig is their only default and
// reaper.Config.Validate their only check. Commands hand Config.Pass to the
// reaper as it is.

// bindPass is bind for a field of Config.Pass. The row gives no default of
// its own, and no check: reaper.Config.Validate names the setting by its key.
func bindPass[T any](cd codec[T], field func(*reaper.Config) *T) binding {
	b := bind(cd, func(c *Config) *T { return field(&c.Pass) })
	b.inPass = true
	return b
}

// passProblems sorts what reaper.Config.Validate reports: the problem of each
// bad setting, by key, and the relations between settings, which name their
// keys themselves.
func passProblems(pc reaper.Config) (byKey map[string]error, relations []error) {
	byKey = map[string]error{}
	for _, err := range joined(pc.Validate()) {
		if se := (*reaper.SettingError)(nil); errors.As(err, &se) {
			byKey[se.Key] = errors.Join(byKey[se.Key], errors.New(se.Problem))
			continue
		}
		relations = append(relations, err)
	}
	return byKey, relations
}

// joined is the list of errors that errors.Join put together.
func joined(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}
