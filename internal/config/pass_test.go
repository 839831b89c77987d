package config

import (
	"errors"
	"reflect"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/reaper"
)

// TestDefaultIsTheReapersDefault: the configuration's defaults of the
// settings a pass reads are reaper.DefaultConfig, and no row of the table
// writes a second one.
func TestDefaultIsTheReapersDefault(t *testing.T) {
	t.Parallel()
	require.Equal(t, reaper.DefaultConfig(), Default().Pass)
	for _, s := range settings {
		if s.inPass {
			require.Empty(t, s.def, "%s: the default is reaper.DefaultConfig's", s.key)
		}
	}
}

// TestPassGetsEverySetting changes each setting bound to Config.Pass and
// checks that exactly one field follows, and that every field of reaper.Config
// but Force and PodSource is some setting's: a field added to the reaper
// without a setting, or two settings on one field, fails.
func TestPassGetsEverySetting(t *testing.T) {
	t.Parallel()
	// A valid value other than the default, for each setting of Config.Pass.
	other := map[string]string{
		"redis.scan_count": "17", "redis.batch_size": "23", "redis.release_call_holdings": "29", "redis.timeout": "7s", "database.timeout": "11s",
		"heartbeat_grace": "31s", "heartbeat_recheck": "12s", "finished_grace": "61s", "confirm_after": "3m", "suspect_ttl": "2h",
		"lost_running": "failed", "orphaned_waiting": "cancel", "max_dead_fraction": "0.25",
		"min_workers": "4", "max_releases": "10001", "max_task_updates": "1001", "coordinate_with_pulpcore": "false",
		"kubernetes.clock_margin": "3s", "kubernetes.hung_worker_grace": "11m", "kubernetes.timeout": "6s",
	}
	base := reflect.ValueOf(reaper.DefaultConfig())
	covered := map[string]string{}
	for i := range settings {
		s := &settings[i]
		if !s.inPass {
			require.NotContains(t, other, s.key, "%s is not bound to Config.Pass", s.key)
			continue
		}
		alt, ok := other[s.key]
		require.True(t, ok, "TestPassGetsEverySetting needs another value of %s", s.key)
		c := Default()
		require.NotEqual(t, s.get(&c), alt, s.key)
		require.NoError(t, s.apply(&c, alt), s.key)
		require.NoError(t, c.Pass.Validate(), s.key)
		changed := changedFields(base, reflect.ValueOf(c.Pass), "")
		require.Len(t, changed, 1, "%s should change exactly one field of reaper.Config, changed %v", s.key, changed)
		require.NotContains(t, covered, changed[0], "%s and %s both set %s", s.key, covered[changed[0]], changed[0])
		covered[changed[0]] = s.key
	}
	for _, f := range leafFields(reflect.TypeOf(reaper.Config{}), "") {
		if f == "Policy.Force" || f == "PodSource" {
			continue // a flag of the commands that allow it, and what they open: no settings
		}
		require.Contains(t, covered, f, "reaper.Config.%s is no setting's: bind one with bindPass", f)
	}
}

// TestPassChecksNameSettings: every key reaper.Config.Validate names is a
// setting of Config.Pass, and every such setting that can be wrong is
// checked there.
func TestPassChecksNameSettings(t *testing.T) {
	t.Parallel()
	bad := reaper.Config{}
	bad.ScanCount, bad.BatchSize, bad.MinWorkers, bad.MaxReleases, bad.MaxTaskUpdates = -1, -1, -1, -1, -1
	bad.RedisTimeout, bad.DatabaseTimeout, bad.SuspectTTL, bad.KubernetesTimeout = -1, -1, -1, -1
	bad.HeartbeatGrace, bad.HeartbeatRecheck, bad.FinishedGrace, bad.ConfirmAfter = -1, -1, -1, -1
	bad.Kubernetes.HungWorkerGrace, bad.Kubernetes.ClockSkew = -1, -1
	bad.LostRunning, bad.OrphanedWaiting, bad.MaxDeadFraction = "x", "x", 2
	var named []string
	for _, err := range joined(bad.Validate()) {
		if se := (*reaper.SettingError)(nil); errors.As(err, &se) {
			s := settingByKey[se.Key]
			require.NotNil(t, s, "reaper.Config.Validate names %s, which is no setting", se.Key)
			require.True(t, s.inPass, "reaper.Config.Validate checks %s, which is not bound to Config.Pass", se.Key)
			named = append(named, se.Key)
		}
	}
	var want []string
	for _, s := range settings {
		if s.inPass && !s.isBool {
			want = append(want, s.key)
		}
	}
	sort.Strings(named)
	sort.Strings(want)
	require.Equal(t, want, named)
}

// changedFields lists the leaf fields (Policy.MinWorkers) that differ.
func changedFields(a, b reflect.Value, prefix string) []string {
	var out []string
	for i := 0; i < a.NumField(); i++ {
		name := prefix + a.Type().Field(i).Name
		fa, fb := a.Field(i), b.Field(i)
		if fa.Kind() == reflect.Struct {
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
		if f.Type.Kind() == reflect.Struct {
			out = append(out, leafFields(f.Type, prefix+f.Name+".")...)
			continue
		}
		out = append(out, prefix+f.Name)
	}
	return out
}
