// Package config loads lock-reaper's configuration.
//
// Every setting is described once, in the table of settings.go: its dotted
// key, environment variable, flag, default, documentation and parser. The
// settings a pass reads are the exception for their default and check: they
// are bound straight onto Config.Pass, a reaper.Config, whose DefaultConfig
// and Validate (reaper/config.go) hold them. The sources are layered with
// increasing precedence:
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

	"github.com/lock-reaper/lock-reaper/reaper"
)

// Config is lock-reaper's effective configuration. Field comments give the
// dotted key; the table in settings.go documents each one.
type Config struct {
	// Pass is every setting a pass reads, bound here directly: redis.timeout
	// is Pass.RedisTimeout, heartbeat_grace Pass.HeartbeatGrace, and so on
	// (the field comments of reaper.Config give the keys). Its defaults are
	// reaper.DefaultConfig's and its checks reaper.Config.Validate's.
	Pass reaper.Config

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
		TLSCAFile   string // redis.tls_ca_file
		TLSCertFile string // redis.tls_cert_file
		TLSKeyFile  string // redis.tls_key_file
	}
	Database struct {
		URL string // database.url
		// Discrete connection settings: each, when not empty, overrides
		// that part of the URL (see postgres_discrete.go).
		Host        string // database.host
		Port        string // database.port
		Name        string // database.name
		User        string // database.user
		Password    string // database.password
		SSLMode     string // database.sslmode
		SSLRootCert string // database.sslrootcert
		ExecMode    string // database.exec_mode
	}
	Kubernetes struct {
		Enabled      string // kubernetes.enabled
		Namespace    string // kubernetes.namespace
		Selector     string // kubernetes.selector
		Container    string // kubernetes.container
		APIContainer string // kubernetes.api_container
		// Kubeconfig is --kubeconfig (one file) and KubeconfigEnv is
		// KUBECONFIG (a list of files, as kubectl reads it); not keys: a
		// laptop's.
		Kubeconfig    string
		KubeconfigEnv string
	}

	Schedule         string        // schedule
	Jitter           time.Duration // jitter
	FullScanInterval time.Duration // full_scan_interval
	HeartbeatPoll    time.Duration // heartbeat_poll
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

// Default returns the configuration with every default: reaper.DefaultConfig
// for Pass, the settings table's for the rest. Defaults are only parsed
// here, not checked: checking database.url reads the process's PG*
// variables, which must not make Default fail.
func Default() Config {
	c := Config{Pass: reaper.DefaultConfig()}
	for _, s := range settings {
		if s.inPass {
			if s.def != "" {
				// A second default that could drift from the reaper's.
				panic(fmt.Sprintf("config: %s has a default of its own besides reaper.DefaultConfig's", s.key))
			}
			continue
		}
		if err := s.set(&c, s.def); err != nil {
			// The table is code: a default that does not parse is a bug that
			// the tests catch, not a user error.
			panic(fmt.Sprintf("config: default of %s: %v", s.key, err))
		}
	}
	return c
}

// Validate checks every setting and the relations between them: the
// settings of Pass by reaper.Config.Validate, the others by the table's
// checks. It reports all problems at once, each prefixed by its dotted key;
// secret values never appear in the messages.
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
	_, relations := passProblems(c.Pass)
	errs = append(errs, relations...)
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
