package cli

import (
	"context"
	"flag"

	"github.com/lock-reaper/lock-reaper/config"
	"github.com/lock-reaper/lock-reaper/reaper"
)

// runConfig validates the configuration and prints the effective values,
// secrets redacted.
func runConfig(_ context.Context, env Env, args []string) int {
	fs := flag.NewFlagSet("config", flag.ContinueOnError)
	loader := config.Register(fs)
	if code, ok := parseFlags(fs, env, args, 0); !ok {
		return code
	}
	cfg, _, code, ok := loadConfig(loader, env)
	if !ok {
		return code
	}
	if err := reaperConfig(cfg, false).Validate(); err != nil {
		env.Stderr.Write([]byte("lock-reaper: configuration: " + err.Error() + "\n"))
		return reaper.ExitUsage
	}
	if err := cfg.Redacted().WriteYAML(env.Stdout); err != nil {
		return reaper.ExitFailed
	}
	return reaper.ExitOK
}
