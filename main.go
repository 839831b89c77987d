// Command lock-reaper releases stale Pulp task and resource locks in Redis and
// cancels or requeues the tasks their dead workers lost.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/lock-reaper/lock-reaper/internal/cli"
	"github.com/lock-reaper/lock-reaper/internal/exitcode"
	"github.com/lock-reaper/lock-reaper/internal/memlimit"
)

// The build stamps these with -ldflags "-X main.version=... -X
// main.revision=... -X main.buildDate=..." (scripts/docker-build-cmd.sh, the
// Dockerfile). Outside Docker Go records the commit itself, and
// `lock-reaper version` prefers its record.
var (
	version   = "dev"
	revision  = "unknown"
	buildDate = "unknown"
)

func main() {
	// Before any work: the soft memory limit is what keeps a pass over an
	// incident's hundreds of thousands of findings within its container.
	limit, err := memlimit.Choose(os.LookupEnv, os.ReadFile)
	if err != nil {
		fmt.Fprintf(os.Stderr, "lock-reaper: %v\n", err)
		os.Exit(exitcode.Usage)
	}
	if limit.Soft > 0 {
		debug.SetMemoryLimit(limit.Soft)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Main(ctx, cli.Env{
		Args: os.Args[1:], Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr,
		LookupEnv: os.LookupEnv, Environ: os.Environ,
		Version: version, Revision: revision, BuildDate: buildDate,
	})
	stop()
	os.Exit(code)
}
