package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/lock-reaper/lock-reaper/internal/config"
	"github.com/lock-reaper/lock-reaper/internal/exitcode"
)

func configCommand() command {
	return command{
		name: "config", summary: "validate the configuration and print the effective values, secrets redacted",
		keys: allKeys, exits: []exitCode{{0, "the configuration is valid"}, {2, "it is not (every problem is named)"}},
		flags: func(_ *cobra.Command, loader *config.Loader) runFunc {
			return func(ctx context.Context, env Env, _ []string) int { return runConfig(ctx, env, loader) }
		},
	}
}

// runConfig validates the configuration and prints the effective values,
// secrets redacted.
func runConfig(_ context.Context, env Env, loader *config.Loader) int {
	cfg, _, code, ok := loadConfig(loader, env)
	if !ok {
		return code
	}
	if err := cfg.Redacted().WriteYAML(env.Stdout); err != nil {
		return exitcode.Failed
	}
	if err := writeResolved(env.Stdout, cfg); err != nil {
		configFailure(env.Stderr, cfg.Log.Format, "lock-reaper", err)
		return exitcode.Usage
	}
	return exitcode.OK
}

// writeResolved prints, as YAML comments so that the output stays a valid
// configuration file, where the connection settings lead: database.url
// with libpq's PG* variables and defaults applied, the password only as set
// or not, and the Redis server.
func writeResolved(w io.Writer, cfg config.Config) error {
	pc, err := config.PoolConfig(cfg)
	if err != nil {
		return fmt.Errorf("database.url: %w", err)
	}
	rdb, err := config.NewRedisClient(cfg)
	if err != nil {
		return fmt.Errorf("redis.url: %w", err)
	}
	defer rdb.Close()
	fmt.Fprintln(w, "\n# Resolved connections (libpq's PG* environment, ~/.pgpass and defaults applied; nothing was dialled):")
	fmt.Fprintf(w, "#   redis: %s\n", redisTarget(cfg.Redis.URL, rdb))
	fmt.Fprintln(w, "#   database:")
	for _, kv := range databaseResolved(pc) {
		fmt.Fprintf(w, "#     %s: %s\n", kv[0], quoteText(kv[1]))
	}
	return nil
}
