// Package config loads lock-reaper's configuration.
//
// Every setting is described once, in the table of settings.go: its dotted
// key, environment variable, flag, default, documentation and parser. The
// sources are layered with increasing precedence:
//
//	defaults < YAML file (--config or REAPER_CONFIG) < REAPER_* environment < flags
//
// YAML values, environment values and flag values all go through the same
// per-setting parser, so a mistake reads the same wherever it was made, and a
// value that does not parse is always an error, never a silent default.
package config

import (
	"errors"
	"fmt"
	"time"
)

// Config is lock-reaper's effective configuration. Field comments give the
// dotted key; the table in settings.go documents each one.
type Config struct {
	Redis struct {
		URL string // redis.url
		// Discrete connection settings: each, when not empty, overrides
		// that part of the URL (see redis_discrete.go).
		Host     string // redis.host
		Port     string // redis.port
		DB       string // redis.db
		Username string // redis.username
		Password string // redis.password
		// TLS files of a rediss:// connection (see redis_tls.go).
		TLSCAFile   string        // redis.tls_ca_file
		TLSCertFile string        // redis.tls_cert_file
		TLSKeyFile  string        // redis.tls_key_file
		ScanCount   int           // redis.scan_count
		BatchSize   int           // redis.batch_size
		Timeout     time.Duration // redis.timeout
	}
	Database struct {
		URL string // database.url
		// Discrete connection settings: each, when not empty, overrides
		// that part of the URL (see postgres_discrete.go).
		Host        string        // database.host
		Port        string        // database.port
		Name        string        // database.name
		User        string        // database.user
		Password    string        // database.password
		SSLMode     string        // database.sslmode
		SSLRootCert string        // database.sslrootcert
		Timeout     time.Duration // database.timeout
		ExecMode    string        // database.exec_mode
	}
	HeartbeatGrace time.Duration // heartbeat_grace
	FinishedGrace  time.Duration // finished_grace
	ConfirmAfter   time.Duration // confirm_after
	SuspectTTL     time.Duration // suspect_ttl

	LostRunning     string // lost_running
	OrphanedWaiting string // orphaned_waiting

	MaxDeadFraction float64 // max_dead_fraction
	MinWorkers      int     // min_workers
	MaxReleases     int     // max_releases
	MaxTaskUpdates  int     // max_task_updates

	CoordinateWithPulpcore bool // coordinate_with_pulpcore

	Kubernetes struct {
		Enabled         string        // kubernetes.enabled
		Namespace       string        // kubernetes.namespace
		Selector        string        // kubernetes.selector
		Container       string        // kubernetes.container
		APIContainer    string        // kubernetes.api_container
		ClockMargin     time.Duration // kubernetes.clock_margin
		HungWorkerGrace time.Duration // kubernetes.hung_worker_grace
		Timeout         time.Duration // kubernetes.timeout
		// Kubeconfig is --kubeconfig (one file) and KubeconfigEnv is
		// KUBECONFIG (a list of files, as kubectl reads it); not keys: a
		// laptop's.
		Kubeconfig    string
		KubeconfigEnv string
	}

	Schedule         string        // schedule
	Jitter           time.Duration // jitter
	FullScanInterval time.Duration // full_scan_interval
	Listen           string        // listen
	StatusPage       bool          // status_page
	PushgatewayURL   string        // pushgateway_url
	// PushgatewayGrouping is pushgateway_grouping: name=value pairs.
	PushgatewayGrouping string

	Log struct {
		Format string // log.format
		Level  string // log.level
	}
	Output string // output
}

// Default returns the configuration with every default of the settings
// table. Defaults are only parsed here, not checked: checking database.url
// reads the process's PG* variables, which must not make Default fail.
func Default() Config {
	var c Config
	for _, s := range settings {
		if err := s.set(&c, s.def); err != nil {
			// The table is code: a default that does not parse is a bug that
			// the tests catch, not a user error.
			panic(fmt.Sprintf("config: default of %s: %v", s.key, err))
		}
	}
	return c
}

// Validate checks every setting and the relations between them. It reports
// all problems at once, each prefixed by its dotted key; secret values never
// appear in the messages.
func (c Config) Validate() error {
	var errs []error
	for _, s := range settings {
		if err := s.check(&c); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", s.key, err))
		}
	}
	if err := checkDatabaseConn(c); err != nil {
		errs = append(errs, fmt.Errorf("database settings: %w", err))
	}
	if err := checkRedisConn(c); err != nil {
		errs = append(errs, fmt.Errorf("redis settings: %w", err))
	}
	// A suspect must outlive the wait for its confirmation, otherwise it
	// expires before it can ever be confirmed and nothing is released.
	if c.SuspectTTL <= c.ConfirmAfter {
		errs = append(errs, fmt.Errorf("suspect_ttl (%s) must be greater than confirm_after (%s)",
			formatDuration(c.SuspectTTL), formatDuration(c.ConfirmAfter)))
	}
	return errors.Join(errs...)
}

// Redacted returns a copy of c whose secret settings have their passwords
// replaced by "xxxxx"; it is what may be logged or printed.
func (c Config) Redacted() Config {
	for _, s := range settings {
		if s.sensitive() {
			// Redacting a URL keeps it parseable, so assigning without the
			// checks cannot fail for any value the setter accepted before.
			_ = s.set(&c, s.redact(s.get(&c)))
		}
	}
	return c
}
