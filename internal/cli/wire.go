package cli

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
	"github.com/spf13/pflag"

	"github.com/lock-reaper/lock-reaper/heartbeat/kube"
	"github.com/lock-reaper/lock-reaper/internal/config"
	"github.com/lock-reaper/lock-reaper/internal/exitcode"
	"github.com/lock-reaper/lock-reaper/internal/kubeevents"
	"github.com/lock-reaper/lock-reaper/reaper"
)

// setup is what every command that talks to Redis and PostgreSQL needs.
type setup struct {
	cfg  config.Config
	log  *slog.Logger
	rdb  redis.UniversalClient
	pool *pgxpool.Pool
	// where names the servers, for error messages.
	where targets
	// pods is the watch that keeps the pods for run's passes, nil
	// elsewhere or when Kubernetes evidence is off.
	pods *kube.Watcher
	// podSource is the passes' pod source: pods, a Source listed by each
	// pass (no watch, or the watch refused), or nil when Kubernetes
	// evidence is off.
	podSource reaper.PodSource
	// tally sums up the released holdings per owner in text logs; the
	// commands that release flush it after their pass. nil otherwise.
	tally *releaseTally
	// events records the Kubernetes Events of once's and run's passes;
	// nil when Kubernetes evidence is off.
	events *kubeevents.Recorder
	// eventFailures counts the Events once's pass could not write, for
	// its pushed metrics.
	eventFailures int
}

func (s *setup) close() {
	if s.pool != nil {
		s.pool.Close()
	}
	if s.rdb != nil {
		_ = s.rdb.Close()
	}
}

// loadConfig loads and validates the configuration registered on fs. A bad
// setting is a usage error naming the key.
func loadConfig(loader *config.Loader, env Env) (config.Config, *slog.Logger, int, bool) {
	if env.Environ != nil {
		if err := config.CheckEnviron(env.Environ()); err != nil {
			configFailure(env.Stderr, loader.LogFormat(env.LookupEnv), "lock-reaper", err)
			return config.Config{}, nil, exitcode.Usage, false
		}
	}
	cfg, err := loader.Load(env.LookupEnv)
	if err != nil {
		configFailure(env.Stderr, loader.LogFormat(env.LookupEnv), "lock-reaper", err)
		return cfg, nil, exitcode.Usage, false
	}
	logger, err := newLogger(env.Stderr, cfg.Log.Format, cfg.Log.Level)
	if err != nil {
		configFailure(env.Stderr, cfg.Log.Format, "lock-reaper", err)
		return cfg, nil, exitcode.Usage, false
	}
	return cfg, logger, 0, true
}

// connect opens the Redis client and the database pool. Neither dials here:
// an unreachable service fails the pass, with the error in its report.
func connect(cfg config.Config, logger *slog.Logger, env Env) (*setup, int, bool) {
	s := &setup{cfg: cfg, log: logger}
	var err error
	if s.rdb, err = config.NewRedisClient(cfg); err != nil {
		configFailure(env.Stderr, cfg.Log.Format, "lock-reaper", fmt.Errorf("redis.url: %w", err))
		return nil, exitcode.Usage, false
	}
	pc, err := config.PoolConfig(cfg)
	if err != nil {
		s.close()
		configFailure(env.Stderr, cfg.Log.Format, "lock-reaper", fmt.Errorf("database.url: %w", err))
		return nil, exitcode.Usage, false
	}
	s.where = targets{redis: redisTarget(cfg.Redis.URL, s.rdb), database: databaseTarget(pc), databaseUser: pc.ConnConfig.User}
	if s.pool, err = pgxpool.NewWithConfig(context.Background(), pc); err != nil {
		s.close()
		configFailure(env.Stderr, cfg.Log.Format, "lock-reaper", fmt.Errorf("database.url: %w", err))
		return nil, exitcode.Usage, false
	}
	return s, 0, true
}

// newReaper wires a reaper for a command: config, logger, clients.
func newReaper(fs *pflag.FlagSet, loader *config.Loader, env Env, force bool) (*reaper.Reaper, *setup, int, bool) {
	return newReaperWith(fs, loader, env, force, false)
}

// newReaperWith is newReaper; with watchPods the passes read the pods from a
// watch (setup.pods, which the caller runs) instead of a list per pass.
func newReaperWith(fs *pflag.FlagSet, loader *config.Loader, env Env, force, watchPods bool) (*reaper.Reaper, *setup, int, bool) {
	cfg, logger, code, ok := loadConfig(loader, env)
	if !ok {
		return nil, nil, code, false
	}
	s, code, ok := connect(cfg, logger, env)
	if !ok {
		return nil, nil, code, false
	}
	if t, ok := logger.Handler().(*releaseTally); ok {
		if watchPods {
			// The daemon's passes flush nothing: they keep a line per
			// holding, with the pass's own summary line after them.
			logger = slog.New(t.inner)
		} else {
			s.tally = t
		}
		s.log = logger
	}
	// The reaper takes the configuration's Pass as it is, with force (a
	// flag of the commands that allow it) and the pod source opened here.
	rc := cfg.Pass
	rc.Force = force
	pods, watchable, events, err := openPods(context.Background(), cfg, logger, env.LookupEnv)
	if err != nil {
		s.close()
		configFailure(env.Stderr, cfg.Log.Format, "lock-reaper "+fs.Name(), err)
		return nil, nil, exitcode.Usage, false
	}
	rc.PodSource = pods
	s.events = events
	if src, ok := pods.(*kube.Source); ok && watchPods && watchable {
		if s.pods, err = kube.NewWatcher(src, kube.WatchConfig{Logger: logger}); err != nil {
			s.close()
			fmt.Fprintf(env.Stderr, "lock-reaper %s: configuration: %v\n", fs.Name(), err)
			return nil, nil, exitcode.Usage, false
		}
		rc.PodSource = s.pods
	}
	s.podSource = rc.PodSource
	r, err := reaper.New(rc, s.rdb, s.pool, logger)
	if err != nil {
		s.close()
		configFailure(env.Stderr, cfg.Log.Format, "lock-reaper "+fs.Name(), err)
		return nil, nil, exitcode.Usage, false
	}
	return r, s, 0, true
}

// failed describes a pass's or an inspection's error in an operator's words.
func (s *setup) failed(err error) failure { return explainFailure(err, s.where) }

// passExit is the exit code of a pass: its report's, or 2 when it failed
// for a reason of configuration. The report's error is put in the
// operator's words.
func (s *setup) passExit(rep *reaper.Report, err error) int {
	if err == nil {
		return exitcode.Of(rep)
	}
	f := s.failed(err)
	rep.Error = f.message
	if f.configuration {
		return exitcode.Usage
	}
	return exitcode.Of(rep)
}
