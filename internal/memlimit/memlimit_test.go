package memlimit

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

// files fakes the cgroup files: a missing name is os.ErrNotExist.
func files(m map[string]string) func(string) ([]byte, error) {
	return func(name string) ([]byte, error) {
		if v, ok := m[name]; ok {
			return []byte(v), nil
		}
		return nil, os.ErrNotExist
	}
}

func env(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestChooseSoftLimit(t *testing.T) {
	const mi = 1 << 20
	cases := []struct {
		name   string
		env    map[string]string
		files  map[string]string
		want   Setting
		errHas string
	}{
		{name: "GOMEMLIMIT wins, the runtime reads it", env: map[string]string{"GOMEMLIMIT": "100MiB", Env: "134217728"}, files: map[string]string{cgroupV2Max: "268435456\n"}},
		{name: "the chart's container limit, in bytes", env: map[string]string{Env: "134217728"}, want: Setting{Container: 128 * mi, From: Env, Soft: 96 * mi}},
		{name: "with a suffix", env: map[string]string{Env: "256Mi"}, want: Setting{Container: 256 * mi, From: Env, Soft: 224 * mi}},
		{name: "the variable before the cgroup", env: map[string]string{Env: "1Gi"}, files: map[string]string{cgroupV2Max: "268435456\n"}, want: Setting{Container: 1024 * mi, From: Env, Soft: 1024 * mi * 9 / 10}},
		{name: "cgroup v2", files: map[string]string{cgroupV2Max: "268435456\n"}, want: Setting{Container: 256 * mi, From: cgroupV2Max, Soft: 224 * mi}},
		{name: "cgroup v2 without a limit", files: map[string]string{cgroupV2Max: "max\n", cgroupV1Limit: "268435456\n"}},
		{name: "cgroup v1", files: map[string]string{cgroupV1Limit: "268435456\n"}, want: Setting{Container: 256 * mi, From: cgroupV1Limit, Soft: 224 * mi}},
		{name: "cgroup v1 without a limit", files: map[string]string{cgroupV1Limit: "9223372036854771712\n"}},
		{name: "no cgroup files", files: map[string]string{}},
		{name: "an empty variable is unset", env: map[string]string{Env: "", "GOMEMLIMIT": ""}, files: map[string]string{cgroupV2Max: "268435456"}, want: Setting{Container: 256 * mi, From: cgroupV2Max, Soft: 224 * mi}},
		{name: "not a number", env: map[string]string{Env: "128MB"}, errHas: "want a number of bytes"},
		{name: "zero", env: map[string]string{Env: "0"}, errHas: "positive"},
		{name: "too large", env: map[string]string{Env: "9223372036854775807Gi"}, errHas: "too large"},
	}
	for _, tc := range cases {
		got, err := Choose(env(tc.env), files(tc.files))
		if tc.errHas != "" {
			require.ErrorContains(t, err, tc.errHas, tc.name)
			require.ErrorContains(t, err, Env, tc.name)
			continue
		}
		require.NoError(t, err, tc.name)
		require.Equal(t, tc.want, got, tc.name)
	}
}

// TestSoftOf: the soft limit leaves Reserve of a small container's limit,
// takes at most Fraction of a large one's, and at least half of any.
func TestSoftOf(t *testing.T) {
	const mi = 1 << 20
	for _, c := range []struct{ container, want int64 }{
		{128 * mi, 96 * mi},
		{256 * mi, 224 * mi},
		{320 * mi, 288 * mi},
		{1024 * mi, 1024 * mi * 9 / 10},
		{64 * mi, 32 * mi},
		{40 * mi, 20 * mi},
	} {
		require.Equal(t, c.want, SoftOf(c.container), "container %d MiB", c.container/mi)
	}
}
