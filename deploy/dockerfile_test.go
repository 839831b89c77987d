package deploy

import (
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	"github.com/moby/buildkit/frontend/dockerfile/linter"
	"github.com/moby/buildkit/frontend/dockerfile/parser"
	"github.com/moby/buildkit/frontend/dockerfile/shell"
)

const (
	repoRoot        = ".."
	buildScriptPath = "scripts/docker-build-cmd.sh"
	// nonrootUID is the nonroot user of the distroless images; the chart's
	// securityContext runs as the same user.
	nonrootUID = "65532"
)

// finalBaseImage is what the image may be based on: a static distroless
// image as nonroot, pinned by digest, or scratch.
var finalBaseImage = regexp.MustCompile(`^(gcr\.io/distroless/static(-debian[0-9]+)?:nonroot@sha256:[0-9a-f]{64}|scratch)$`)

// image is the Dockerfile as BuildKit reads it.
type image struct {
	stages []instructions.Stage
	// build is the stage whose output the final stage copies.
	build *instructions.Stage
	final *instructions.Stage
	// copyBinary is the final stage's COPY --from=<build stage>.
	copyBinary *instructions.CopyCommand
}

// parseDockerfile parses the Dockerfile with BuildKit's parser and typed
// instructions, failing on any parser or lint warning.
func parseDockerfile(t *testing.T) image {
	t.Helper()
	f, err := os.Open(filepath.Join(repoRoot, "Dockerfile"))
	if err != nil {
		t.Fatalf("open Dockerfile: %v", err)
	}
	defer f.Close()

	res, err := parser.Parse(f)
	if err != nil {
		t.Fatalf("parse Dockerfile: %v", err)
	}
	for _, w := range res.Warnings {
		t.Errorf("Dockerfile parser warning: %s", w.Short)
	}
	lint := linter.New(&linter.Config{
		Warn: func(rule, _, _, msg string, _ []parser.Range) {
			t.Errorf("Dockerfile lint %s: %s", rule, msg)
		},
	})
	stages, _, err := instructions.Parse(res.AST, lint)
	if err != nil {
		t.Fatalf("read Dockerfile instructions: %v", err)
	}
	if len(stages) < 2 {
		t.Fatalf("Dockerfile has %d stage(s), want a multi-stage build", len(stages))
	}

	img := image{stages: stages, final: &stages[len(stages)-1]}
	for _, cmd := range img.final.Commands {
		c, ok := cmd.(*instructions.CopyCommand)
		if !ok || c.From == "" {
			continue
		}
		if img.copyBinary != nil {
			t.Fatalf("final stage copies from more than one stage")
		}
		img.copyBinary = c
		for i := range stages[:len(stages)-1] {
			if strings.EqualFold(stages[i].Name, c.From) {
				img.build = &stages[i]
			}
		}
	}
	if img.copyBinary == nil || img.build == nil {
		t.Fatalf("final stage has no COPY --from=<build stage>")
	}
	return img
}

// buildCommand is the go build RUN of the build stage, split into words by
// BuildKit's shell lexer with the given build arguments.
type buildCommand struct {
	env  map[string]string // leading NAME=value assignments
	argv []string          // from "go" on
}

func (img image) goBuild(t *testing.T, buildArgs ...string) buildCommand {
	t.Helper()
	var found []*instructions.RunCommand
	for _, cmd := range img.build.Commands {
		if run, ok := cmd.(*instructions.RunCommand); ok && strings.Contains(strings.Join(run.CmdLine, " "), "go build") {
			found = append(found, run)
		}
	}
	if len(found) != 1 {
		t.Fatalf("build stage has %d RUN ... go build, want exactly 1", len(found))
	}
	run := found[0]
	if !run.PrependShell || len(run.CmdLine) != 1 {
		t.Fatalf("go build RUN must be in shell form (so that ${VERSION} expands): %q", run.CmdLine)
	}
	words, err := shell.NewLex(parser.DefaultEscapeToken).ProcessWords(run.CmdLine[0], shell.EnvsFromSlice(buildArgs))
	if err != nil {
		t.Fatalf("split go build RUN %q: %v", run.CmdLine[0], err)
	}
	return splitAssignments(t, words)
}

var assignment = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_]*)=(.*)$`)

// splitAssignments separates a shell command's leading NAME=value words from
// the command itself, which must be go build.
func splitAssignments(t *testing.T, words []string) buildCommand {
	t.Helper()
	cmd := buildCommand{env: map[string]string{}}
	for len(words) > 0 {
		m := assignment.FindStringSubmatch(words[0])
		if m == nil {
			break
		}
		cmd.env[m[1]] = m[2]
		words = words[1:]
	}
	if len(words) < 2 || words[0] != "go" || words[1] != "build" {
		t.Fatalf("command is not go build: %q", words)
	}
	cmd.argv = words
	return cmd
}

// flagValue returns the value of a go build flag given as "-f value".
func (c buildCommand) flagValue(t *testing.T, flag string) string {
	t.Helper()
	i := slices.Index(c.argv, flag)
	if i < 0 || i+1 >= len(c.argv) {
		t.Fatalf("go build has no %s <value>: %q", flag, c.argv)
	}
	return c.argv[i+1]
}

func readLog(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatalf("the fake go was not run: %v", err)
	}
	return string(b)
}

// argDefault returns the default of ARG name declared in stage.
func argDefault(t *testing.T, stage *instructions.Stage, name string) string {
	t.Helper()
	for _, cmd := range stage.Commands {
		if arg, ok := cmd.(*instructions.ArgCommand); ok {
			for _, kv := range arg.Args {
				if kv.Key == name && kv.Value != nil {
					return *kv.Value
				}
			}
		}
	}
	t.Fatalf("stage %q declares no ARG %s=<default>", stage.Name, name)
	return ""
}

func TestDockerfileBuildStage(t *testing.T) {
	t.Parallel()
	img := parseDockerfile(t)

	goMod, err := os.ReadFile(filepath.Join(repoRoot, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^go ([0-9]+\.[0-9]+(\.[0-9]+)?)\s*$`).FindSubmatch(goMod)
	if m == nil {
		t.Fatal("go.mod has no go directive")
	}
	// The Go release of go.mod exactly (the image's GOTOOLCHAIN=local builds
	// with what it has), a Debian variant at most, and pinned by digest.
	want := regexp.MustCompile(`^golang:` + regexp.QuoteMeta(string(m[1])) + `(-[a-z0-9]+)?@sha256:[0-9a-f]{64}$`)
	if !want.MatchString(img.build.BaseName) {
		t.Errorf("build stage FROM %s, want golang:%s[-variant]@sha256:<digest> (go.mod's Go release, pinned)", img.build.BaseName, m[1])
	}

	if got := argDefault(t, img.build, "VERSION"); got != "dev" {
		t.Errorf("ARG VERSION defaults to %q, want dev", got)
	}
	// The stamps not given are unknown, in the binary as in the labels.
	for _, arg := range []string{"REVISION", "BUILD_DATE"} {
		if build, final := argDefault(t, img.build, arg), argDefault(t, img.final, arg); build != "unknown" || final != "unknown" {
			t.Errorf("ARG %s defaults to %q in the build stage and %q in the final one, want unknown in both", arg, build, final)
		}
	}

	cmd := img.goBuild(t, "VERSION=v9.8.7-test", "REVISION=0123abcd", "BUILD_DATE=2026-07-25T08:00:00Z")
	if cmd.env["CGO_ENABLED"] != "0" {
		t.Errorf("go build runs with CGO_ENABLED=%q, want 0 for a static binary", cmd.env["CGO_ENABLED"])
	}
	if !slices.Contains(cmd.argv, "-trimpath") {
		t.Errorf("go build lacks -trimpath: %q", cmd.argv)
	}
	ldflags := strings.Fields(cmd.flagValue(t, "-ldflags"))
	for _, want := range []string{"-s", "-w"} {
		if !slices.Contains(ldflags, want) {
			t.Errorf("-ldflags %q lacks %s", ldflags, want)
		}
	}
	// What `lock-reaper version` prints: the image's build context has no
	// .git, so Go records no commit of its own there.
	var stamps []string
	for i, f := range ldflags {
		if f == "-X" && i+1 < len(ldflags) {
			stamps = append(stamps, ldflags[i+1])
		}
	}
	for _, want := range []string{"main.version=v9.8.7-test", "main.revision=0123abcd", "main.buildDate=2026-07-25T08:00:00Z"} {
		if !slices.Contains(stamps, want) {
			t.Errorf("-ldflags %q does not stamp -X %s", ldflags, want)
		}
	}
	if pkg := cmd.argv[len(cmd.argv)-1]; pkg != "." {
		t.Errorf("go build builds %q, want the main package at the repository root (.)", pkg)
	}

	out := cmd.flagValue(t, "-o")
	if !slices.Equal(img.copyBinary.SourcePaths, []string{out}) {
		t.Errorf("final stage copies %q from the build stage, want the go build output %s", img.copyBinary.SourcePaths, out)
	}
}

func TestDockerfileFinalStage(t *testing.T) {
	t.Parallel()
	img := parseDockerfile(t)
	final := img.final

	if !finalBaseImage.MatchString(final.BaseName) {
		t.Errorf("final stage FROM %s, want static distroless as nonroot pinned by digest (@sha256:...), or scratch", final.BaseName)
	}

	var user string
	var entrypoint, cmdLine *instructions.ShellDependantCmdLine
	var exposed []string
	for _, c := range final.Commands {
		switch c := c.(type) {
		case *instructions.UserCommand:
			user = c.User
		case *instructions.EntrypointCommand:
			entrypoint = &c.ShellDependantCmdLine
		case *instructions.CmdCommand:
			cmdLine = &c.ShellDependantCmdLine
		case *instructions.ExposeCommand:
			exposed = append(exposed, c.Ports...)
		case *instructions.RunCommand:
			t.Errorf("final stage runs %q: the distroless image has no shell", c.CmdLine)
		case *instructions.VolumeCommand:
			t.Errorf("final stage declares VOLUME %q: nothing is written at run time", c.Volumes)
		}
	}

	if uid, gid, _ := strings.Cut(user, ":"); uid != nonrootUID || (gid != "" && gid != nonrootUID) {
		t.Errorf("final stage USER %q, want %s or %s:%s", user, nonrootUID, nonrootUID, nonrootUID)
	}

	binary := img.copyBinary.DestPath
	switch {
	case entrypoint == nil:
		t.Error("final stage has no ENTRYPOINT")
	case entrypoint.PrependShell:
		t.Errorf("ENTRYPOINT %q is in shell form; want exec form, there is no shell", entrypoint.CmdLine)
	case !slices.Equal(entrypoint.CmdLine, []string{binary}):
		t.Errorf("ENTRYPOINT %q, want [%q], the copied binary", entrypoint.CmdLine, binary)
	}
	if cmdLine == nil || cmdLine.PrependShell || !slices.Equal(cmdLine.CmdLine, []string{"once"}) {
		t.Errorf(`CMD must be ["once"], got %+v`, cmdLine)
	}
	if !slices.Equal(exposed, []string{"9090"}) {
		t.Errorf("EXPOSE %q, want 9090, the default listen port", exposed)
	}
}

// TestBuildScriptRunsTheDockerfileCommand runs scripts/docker-build-cmd.sh
// with a fake go on PATH and checks that it invokes exactly the go build
// command of the Dockerfile's RUN line, as BuildKit expands it: the same
// environment assignments and arguments, the same VERSION default as the
// Dockerfile's ARG, only the -o path differing.
func TestBuildScriptRunsTheDockerfileCommand(t *testing.T) {
	t.Parallel()
	img := parseDockerfile(t)
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	root, err = filepath.EvalSymlinks(root)
	if err != nil {
		t.Fatal(err)
	}

	if info, err := os.Stat(filepath.Join(root, buildScriptPath)); err != nil || info.Mode()&0o111 == 0 {
		t.Fatalf("%s must exist and be executable (CI and make build run it directly): %v", buildScriptPath, err)
	}

	fakeBin := t.TempDir()
	// The fake go records its directory, its whole environment and its
	// arguments, one a line.
	fakeGo := `#!/bin/sh
pwd -P >"$FAKE_GO_LOG.pwd"
env >"$FAKE_GO_LOG.env"
for a in "$@"; do printf '%s\n' "$a"; done >"$FAKE_GO_LOG.args"
`
	if err := os.WriteFile(filepath.Join(fakeBin, "go"), []byte(fakeGo), 0o755); err != nil {
		t.Fatal(err)
	}

	callerDir := t.TempDir()
	cases := []struct {
		name    string
		stamps  map[string]string // VERSION, REVISION, BUILD_DATE; the unset ones take the Dockerfile's defaults
		args    []string
		wantOut string
	}{
		{"stamps and absolute output", map[string]string{"VERSION": "v1.2.3-rc.1", "REVISION": "0123abcd", "BUILD_DATE": "2026-07-25T08:00:00Z"},
			[]string{"/tmp/lock-reaper-test/out"}, "/tmp/lock-reaper-test/out"},
		{"relative output from the caller's directory", map[string]string{"VERSION": "v1.2.3"}, []string{"out/lock-reaper"}, filepath.Join(callerDir, "out/lock-reaper")},
		{"defaults", nil, nil, filepath.Join(root, "bin/lock-reaper")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var buildArgs []string
			for _, arg := range []string{"VERSION", "REVISION", "BUILD_DATE"} {
				v, ok := tc.stamps[arg]
				if !ok {
					v = argDefault(t, img.build, arg)
				}
				buildArgs = append(buildArgs, arg+"="+v)
			}
			want := img.goBuild(t, buildArgs...)
			want.argv[slices.Index(want.argv, "-o")+1] = tc.wantOut

			log := filepath.Join(t.TempDir(), "go.log")
			env := []string{"PATH=" + fakeBin + string(os.PathListSeparator) + os.Getenv("PATH"), "FAKE_GO_LOG=" + log}
			for k, v := range tc.stamps {
				env = append(env, k+"="+v)
			}
			run := exec.Command(filepath.Join(root, buildScriptPath), tc.args...)
			run.Dir = callerDir
			run.Env = env
			if out, err := run.CombinedOutput(); err != nil {
				t.Fatalf("%s: %v\n%s", buildScriptPath, err, out)
			}

			gotDir := strings.TrimSpace(readLog(t, log+".pwd"))
			gotArgv := strings.Split(strings.TrimSuffix(readLog(t, log+".args"), "\n"), "\n")
			// The script may change the environment of go build only as the
			// Dockerfile's RUN does; a shell sets PWD, OLDPWD and SHLVL itself.
			gotEnv := map[string]string{}
			for _, kv := range strings.Split(strings.TrimSuffix(readLog(t, log+".env"), "\n"), "\n") {
				k, v, _ := strings.Cut(kv, "=")
				gotEnv[k] = v
			}
			for _, kv := range env {
				k, v, _ := strings.Cut(kv, "=")
				if _, set := want.env[k]; !set && gotEnv[k] == v {
					delete(gotEnv, k)
				}
			}
			for _, k := range []string{"PWD", "OLDPWD", "SHLVL", "_"} {
				delete(gotEnv, k)
			}

			if gotDir != root {
				t.Errorf("go build runs in %s, want the repository root %s", gotDir, root)
			}
			if !maps.Equal(gotEnv, want.env) {
				t.Errorf("go build runs with the environment changed by %v, the Dockerfile's by %v", gotEnv, want.env)
			}
			if got := append([]string{"go"}, gotArgv...); !slices.Equal(got, want.argv) {
				t.Errorf("the script runs\n\t%q\nthe Dockerfile (%s, -o %s)\n\t%q", got, buildArgs, tc.wantOut, want.argv)
			}
		})
	}
}
