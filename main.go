// Command lock-reaper releases stale Pulp task and resource locks in Redis and
// cancels or requeues the tasks their dead workers lost.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/lock-reaper/lock-reaper/cli"
)

// version is stamped at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Main(ctx, cli.Env{
		Args: os.Args[1:], Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr,
		LookupEnv: os.LookupEnv, Environ: os.Environ, Version: version,
	})
	stop()
	os.Exit(code)
}
