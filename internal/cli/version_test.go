package cli

import (
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestVersionText(t *testing.T) {
	t.Parallel()
	const rev = "0123456789abcdef0123456789abcdef01234567"
	platform := " " + runtime.GOOS + "/" + runtime.GOARCH + "\n"
	vcs := func(modified string) []debug.BuildSetting {
		return []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: rev},
			{Key: "vcs.time", Value: "2026-07-24T10:00:00Z"}, {Key: "vcs.modified", Value: modified}}
	}
	for _, tc := range []struct {
		name  string
		s     stamped
		info  *debug.BuildInfo
		wants string
	}{
		{"a release build from a clean checkout", stamped{"v0.1.0", "unknown", "2026-07-25T08:00:00Z"},
			&debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: vcs("false")},
			"lock-reaper v0.1.0\n  commit:     " + rev + ", unmodified\n  committed:  2026-07-24T10:00:00Z\n" +
				"  built:      2026-07-25T08:00:00Z\n  go:         go1.26.8" + platform},
		{"make build with local changes", stamped{"dev", "unknown", "unknown"},
			&debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: vcs("true")},
			"lock-reaper dev\n  commit:     " + rev + ", with local changes (modified)\n  committed:  2026-07-24T10:00:00Z\n" +
				"  built:      not stamped (a release build stamps it)\n  go:         go1.26.8" + platform},
		{"an image: no .git in the build context, the commit stamped", stamped{"0.1.0", "fedcba9876-dirty", "2026-07-25T08:00:00Z"},
			&debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}},
			"lock-reaper 0.1.0\n  commit:     fedcba9876-dirty\n  built:      2026-07-25T08:00:00Z\n  go:         go1.26.8" + platform},
		{"go install ...@v0.2.0: the module's version", stamped{"dev", "unknown", "unknown"},
			&debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.2.0"}},
			"lock-reaper v0.2.0\n  commit:     unknown (built without version control information)\n" +
				"  built:      not stamped (a release build stamps it)\n  go:         go1.26.8" + platform},
		{"no build information", stamped{}, nil,
			"lock-reaper dev\n  commit:     unknown (built without version control information)\n" +
				"  built:      not stamped (a release build stamps it)\n  go:         " + runtime.Version() + platform},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.wants, versionText(tc.s, tc.info))
		})
	}
}

// version and --version print the same, beginning with the stamped version.
func TestVersionCommand(t *testing.T) {
	t.Parallel()
	code, byFlag, _ := run(t, nil, "--version")
	require.Equal(t, 0, code)
	code, byCommand, _ := run(t, nil, "version")
	require.Equal(t, 0, code)
	require.Equal(t, byFlag, byCommand)
	require.Equal(t, "lock-reaper test", firstLine(byFlag))
	require.Contains(t, byFlag, "  go:         go1.")
}
