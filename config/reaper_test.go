package config

import (
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/pass"
)

// TestDefaultIsTheReapersDefault ties the two sets of defaults together: the
// configuration's defaults, handed to the reaper, are pass.DefaultConfig.
func TestDefaultIsTheReapersDefault(t *testing.T) {
	t.Parallel()
	require.Equal(t, pass.DefaultConfig(), Default().Reaper())
	for _, s := range settings {
		if s.reaper != nil {
			require.Equal(t, s.reaper.def, s.def, "%s: the default is the reaper's", s.key)
		}
	}
}

// TestReaperGetsEverySetting changes each setting bound to the reaper and
// checks that exactly one reaper field follows, and that every field of
// pass.Config but Force is some setting's: a field added to the reaper
// without a setting, or a setting that no longer reaches the reaper, fails.
func TestReaperGetsEverySetting(t *testing.T) {
	t.Parallel()
	// A valid value other than the default, for each setting bound to the
	// reaper.
	other := map[string]string{
		"redis.scan_count": "17", "redis.batch_size": "23", "redis.timeout": "7s", "database.timeout": "11s",
		"heartbeat_grace": "31s", "finished_grace": "61s", "confirm_after": "3m", "suspect_ttl": "2h",
		"lost_running": "failed", "orphaned_waiting": "cancel", "max_dead_fraction": "0.25",
		"min_workers": "4", "max_releases": "10001", "max_task_updates": "1001", "coordinate_with_pulpcore": "false",
	}
	base := reflect.ValueOf(pass.DefaultConfig())
	covered := map[string]string{}
	for i := range settings {
		s := &settings[i]
		if s.reaper == nil {
			require.NotContains(t, other, s.key, "%s is not bound to the reaper", s.key)
			continue
		}
		alt, ok := other[s.key]
		require.True(t, ok, "TestReaperGetsEverySetting needs another value of %s", s.key)
		require.NotEqual(t, s.def, alt, s.key)
		c := Default()
		require.NoError(t, s.set(&c, alt), s.key)
		changed := changedFields(base, reflect.ValueOf(c.Reaper()), "")
		require.Len(t, changed, 1, "%s should change exactly one reaper field, changed %v", s.key, changed)
		require.NotContains(t, covered, changed[0], "%s and %s both set %s", s.key, covered[changed[0]], changed[0])
		covered[changed[0]] = s.key
	}
	for _, f := range leafFields(reflect.TypeOf(pass.Config{}), "") {
		switch {
		case f == "Policy.Force":
			continue // a flag of the commands that allow it, not a setting
		case f == "PodSource" || f == "KubernetesTimeout" || strings.HasPrefix(f, "Policy.Kubernetes"):
			continue // the kubernetes.* group, wired by cli.reaperConfig and newReaper
		}
		require.Contains(t, covered, f, "pass.Config.%s is no setting's: bind one with bindReaper", f)
	}
}

// changedFields lists the leaf fields (Policy.MinWorkers) that differ.
func changedFields(a, b reflect.Value, prefix string) []string {
	var out []string
	for i := 0; i < a.NumField(); i++ {
		name := prefix + a.Type().Field(i).Name
		fa, fb := a.Field(i), b.Field(i)
		if fa.Kind() == reflect.Struct && a.Type().Field(i).Anonymous {
			out = append(out, changedFields(fa, fb, name+".")...)
			continue
		}
		if !reflect.DeepEqual(fa.Interface(), fb.Interface()) {
			out = append(out, name)
		}
	}
	return out
}

func leafFields(t reflect.Type, prefix string) []string {
	var out []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if f.Type.Kind() == reflect.Struct && f.Anonymous {
			out = append(out, leafFields(f.Type, prefix+f.Name+".")...)
			continue
		}
		out = append(out, prefix+f.Name)
	}
	return out
}
