package cli

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"

	"github.com/lock-reaper/lock-reaper/internal/config"
	"github.com/lock-reaper/lock-reaper/internal/exitcode"
)

func versionCommand() command {
	return command{
		name: "version", summary: "print the version, the commit it was built from, the build date and the Go version",
		exits: []exitCode{{0, "always"}},
		flags: func(*cobra.Command, *config.Loader) runFunc { return runVersion },
	}
}

func runVersion(_ context.Context, env Env, _ []string) int {
	info, _ := debug.ReadBuildInfo()
	fmt.Fprint(env.Stdout, versionText(stamped{version: env.Version, revision: env.Revision, date: env.BuildDate}, info))
	return exitcode.OK
}

// stamped is what a build passed with -ldflags -X: the release's version,
// and in an image build (whose context has no .git, so Go records no
// commit) the commit and the build date.
type stamped struct {
	version, revision, date string
}

// versionText says which build this is: the version, the commit and whether
// the tree differed from it, when the commit was made, when the binary was
// built, and the Go release and platform. Go's own record of the checkout
// (vcs.revision, vcs.modified, vcs.time, present in any build from a git
// checkout) wins over a stamped revision; a module version (go install
// ...@v1.2.3) stands in for a version nobody stamped. info may be nil.
func versionText(s stamped, info *debug.BuildInfo) string {
	version, revision, date := s.version, notUnknown(s.revision), notUnknown(s.date)
	var modified, committed string
	goVersion := runtime.Version()
	if info != nil {
		if (version == "" || version == "dev") && info.Main.Version != "" && info.Main.Version != "(devel)" {
			version = info.Main.Version
		}
		for _, kv := range info.Settings {
			switch kv.Key {
			case "vcs.revision":
				revision = kv.Value
			case "vcs.modified":
				modified = kv.Value
			case "vcs.time":
				committed = kv.Value
			}
		}
		if info.GoVersion != "" {
			goVersion = info.GoVersion
		}
	}
	if version == "" {
		version = "dev"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "lock-reaper %s\n", version)
	switch {
	case revision == "":
		b.WriteString("  commit:     unknown (built without version control information)\n")
	case modified == "true":
		fmt.Fprintf(&b, "  commit:     %s, with local changes (modified)\n", revision)
	case modified == "false":
		fmt.Fprintf(&b, "  commit:     %s, unmodified\n", revision)
	default:
		fmt.Fprintf(&b, "  commit:     %s\n", revision)
	}
	if committed != "" {
		fmt.Fprintf(&b, "  committed:  %s\n", committed)
	}
	if date == "" {
		date = "not stamped (a release build stamps it)"
	}
	fmt.Fprintf(&b, "  built:      %s\n", date)
	fmt.Fprintf(&b, "  go:         %s %s/%s\n", goVersion, runtime.GOOS, runtime.GOARCH)
	return b.String()
}

// notUnknown is "" for a value the build did not stamp: the Dockerfile's
// ARG default, unknown, as the image's labels say it.
func notUnknown(s string) string {
	if s == "unknown" {
		return ""
	}
	return s
}
