package config

import (
	"bytes"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/lock-reaper/lock-reaper/reaper"
)

var update = flag.Bool("update", false, "rewrite ../config.yaml.example from the settings table")

// env is a fake environment for Load.
type env map[string]string

func (e env) lookup(k string) (string, bool) {
	v, ok := e[k]
	return v, ok
}

// writeFile writes content to a file in a fresh temporary directory.
func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
	return path
}

// load runs Register, fs.Parse(args) and Load, the way the CLI does. A
// non-empty yamlText becomes the file given with --config.
func load(t *testing.T, yamlText string, e env, args ...string) (Config, error) {
	t.Helper()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	l := Register(fs)
	if yamlText != "" {
		args = append([]string{"--config", writeFile(t, "config.yaml", yamlText)}, args...)
	}
	require.NoError(t, fs.Parse(args))
	return l.Load(e.lookup)
}

// value reads a setting back in its textual form.
func value(c Config, key string) string {
	return settingByKey[key].get(&c)
}

func TestDefault(t *testing.T) {
	// The reaper's settings default to the reaper's constants, the only
	// place they are written (TestDefaultIsTheReapersDefault); the others
	// are the configuration's own.
	var want Config
	want.Redis.URL = "redis://localhost:6379/0"
	want.Pass.ScanCount = reaper.DefaultScanCount
	want.Pass.BatchSize = reaper.DefaultBatchSize
	want.Pass.ReleaseCallHoldings = reaper.DefaultReleaseCallHoldings
	want.Pass.RedisTimeout = reaper.DefaultRedisTimeout
	want.Database.URL = ""
	want.Pass.DatabaseTimeout = reaper.DefaultDatabaseTimeout
	want.Pass.HeartbeatGrace = reaper.DefaultHeartbeatGrace
	want.Pass.FinishedGrace = reaper.DefaultFinishedGrace
	want.Pass.ConfirmAfter = reaper.DefaultConfirmAfter
	want.Pass.SuspectTTL = reaper.DefaultSuspectTTL
	want.Pass.LostRunning = reaper.DefaultLostRunning
	want.Pass.OrphanedWaiting = reaper.DefaultOrphanedWaiting
	want.Pass.MaxDeadFraction = reaper.DefaultMaxDeadFraction
	want.Pass.MinWorkers = reaper.DefaultMinWorkers
	want.Pass.MaxReleases = reaper.DefaultMaxReleases
	want.Pass.MaxTaskUpdates = reaper.DefaultMaxTaskUpdates
	want.Pass.CoordinateWithPulpcore = true
	want.Kubernetes.Enabled = "auto"
	want.Kubernetes.Selector = "app.kubernetes.io/managed-by=pulp-operator,app.kubernetes.io/component in (worker,api)"
	want.Kubernetes.Container = "worker"
	want.Kubernetes.APIContainer = "api"
	want.Pass.Kubernetes.ClockSkew = 2 * time.Second
	want.Pass.Kubernetes.HungWorkerGrace = 10 * time.Minute
	want.Pass.KubernetesTimeout = 5 * time.Second
	want.Schedule = "@every 1m"
	want.Jitter = 5 * time.Second
	want.FullScanInterval = 10 * time.Minute
	want.HeartbeatPoll = 2 * time.Second
	want.Listen = ":9090"
	want.StatusPage = true
	want.PushgatewayURL = ""
	want.Log.Format = "auto"
	want.Log.Level = "info"
	want.Output = "text"

	require.Equal(t, want, Default())
	require.NoError(t, Default().Validate())

	got, err := load(t, "", nil)
	require.NoError(t, err)
	require.Equal(t, want, got)
}

func TestTableNames(t *testing.T) {
	seenSections := map[string]bool{}
	last := ""
	for _, s := range settings {
		// Keys of one section stay together, or WriteYAML would split it.
		sec := s.section()
		if sec != "" && sec != last {
			require.False(t, seenSections[sec], "section %q of %s is split in the table", sec, s.key)
			seenSections[sec] = true
		}
		last = sec
		require.NotEmpty(t, s.doc, s.key)
		require.NotEmpty(t, s.kind, s.key)
	}
	byName := map[string]string{}
	for _, s := range settings {
		byName[s.key] = s.env() + " --" + s.flag()
	}
	require.Equal(t, "REAPER_REDIS_SCAN_COUNT --redis-scan-count", byName["redis.scan_count"])
	require.Equal(t, "REAPER_LOG_FORMAT --log-format", byName["log.format"])
	require.Equal(t, "REAPER_HEARTBEAT_GRACE --heartbeat-grace", byName["heartbeat_grace"])
	require.Equal(t, "REAPER_COORDINATE_WITH_PULPCORE --coordinate-with-pulpcore", byName["coordinate_with_pulpcore"])
	require.Equal(t, "REAPER_MAX_DEAD_FRACTION --max-dead-fraction", byName["max_dead_fraction"])
	require.Equal(t, "REAPER_DATABASE_URL --database-url", byName["database.url"])
}

func TestPrecedence(t *testing.T) {
	// Each row sets one key in the file, the environment and a flag, with a
	// different valid value in each.
	cases := []struct {
		key                   string
		file, envVal, flagVal string
	}{
		{"heartbeat_grace", "40s", "50s", "1m10s"},
		{"redis.scan_count", "11", "22", "33"},
		{"max_dead_fraction", "0.1", "0.2", "0.3"},
		{"coordinate_with_pulpcore", "false", "true", "false"},
		{"lost_running", "failed", "canceled", "failed"},
		{"log.level", "debug", "warn", "error"},
		{"database.url", "postgres://a@h1/db", "postgres://b@h2/db", "postgres://c@h3/db"},
		{"redis.url", "redis://h1:6379/1", "rediss://h2:6380/2", "unix:///run/redis.sock?db=3"},
		{"schedule", "@every 2m", "@hourly", "*/5 * * * *"},
	}
	for _, tc := range cases {
		t.Run(tc.key, func(t *testing.T) {
			s := settingByKey[tc.key]
			yamlText := yamlFor(tc.key, tc.file)
			e := env{s.env(): tc.envVal}
			flagArg := "--" + s.flag() + "=" + tc.flagVal

			c, err := load(t, yamlText, nil)
			require.NoError(t, err)
			require.Equal(t, tc.file, value(c, tc.key), "file beats default")

			c, err = load(t, yamlText, e)
			require.NoError(t, err)
			require.Equal(t, tc.envVal, value(c, tc.key), "env beats file")

			c, err = load(t, yamlText, e, flagArg)
			require.NoError(t, err)
			require.Equal(t, tc.flagVal, value(c, tc.key), "flag beats env")

			c, err = load(t, "", nil, flagArg)
			require.NoError(t, err)
			require.Equal(t, tc.flagVal, value(c, tc.key), "flag beats default")
		})
	}
}

// yamlFor writes one dotted key as nested YAML.
func yamlFor(key, val string) string {
	v, err := yaml.Marshal(val)
	if err != nil {
		panic(err)
	}
	if sec, leaf, ok := strings.Cut(key, "."); ok {
		return sec + ":\n  " + leaf + ": " + string(v)
	}
	return key + ": " + string(v)
}

func TestConfigPath(t *testing.T) {
	fromEnv := writeFile(t, "env.yaml", "min_workers: 11\n")
	fromFlag := writeFile(t, "flag.yaml", "min_workers: 22\n")

	c, err := load(t, "", env{"REAPER_CONFIG": fromEnv})
	require.NoError(t, err)
	require.Equal(t, 11, c.Pass.MinWorkers)

	c, err = load(t, "", env{"REAPER_CONFIG": fromEnv}, "--config", fromFlag)
	require.NoError(t, err)
	require.Equal(t, 22, c.Pass.MinWorkers, "--config beats REAPER_CONFIG")

	c, err = load(t, "", env{"REAPER_CONFIG": fromEnv}, "--config=")
	require.NoError(t, err)
	require.Equal(t, 3, c.Pass.MinWorkers, "an empty --config means no file")

	_, err = load(t, "", nil, "--config", filepath.Join(t.TempDir(), "missing.yaml"))
	require.ErrorContains(t, err, "reading config file: open ")

	_, err = load(t, "", env{"REAPER_CONFIG_FILE": fromEnv})
	require.EqualError(t, err, "REAPER_CONFIG_FILE is not supported: set REAPER_CONFIG to the config file's path")
}

func TestEnvFile(t *testing.T) {
	dsn := writeFile(t, "dsn", "postgres://reaper:secret@db/pulp\n")
	c, err := load(t, "", env{"REAPER_DATABASE_URL_FILE": dsn})
	require.NoError(t, err)
	require.Equal(t, "postgres://reaper:secret@db/pulp", c.Database.URL, "trailing newline trimmed")

	// Any setting can come from a file, and a file beats the YAML config.
	n := writeFile(t, "n", "42\r\n")
	c, err = load(t, "redis:\n  scan_count: 7\n", env{"REAPER_REDIS_SCAN_COUNT_FILE": n})
	require.NoError(t, err)
	require.Equal(t, 42, c.Pass.ScanCount)

	_, err = load(t, "", env{"REAPER_DATABASE_URL": "postgres://h/db", "REAPER_DATABASE_URL_FILE": dsn})
	require.EqualError(t, err, "REAPER_DATABASE_URL and REAPER_DATABASE_URL_FILE are both set: set only one")

	_, err = load(t, "", env{"REAPER_DATABASE_URL_FILE": filepath.Join(t.TempDir(), "nope")})
	require.ErrorContains(t, err, "REAPER_DATABASE_URL_FILE: reading secret file: open ")

	_, err = load(t, "", env{"REAPER_DATABASE_URL_FILE": ""})
	require.EqualError(t, err, "REAPER_DATABASE_URL_FILE: empty path")

	bad := writeFile(t, "bad", "abc\n")
	_, err = load(t, "", env{"REAPER_JITTER_FILE": bad})
	require.ErrorContains(t, err, `REAPER_JITTER_FILE: invalid duration "abc"`)
}

func TestYAMLStructureErrors(t *testing.T) {
	cases := []struct {
		name, yaml, want string
	}{
		{"nested unknown", "redis:\n  urll: redis://h\n", `unknown key "redis.urll" (line 2)`},
		{"top unknown", "heartbeat: 30s\n", `unknown key "heartbeat" (line 1)`},
		{"unknown in log", "log:\n  format: json\n  colour: red\n", `unknown key "log.colour" (line 3)`},
		{"nested key at top", "url: redis://h\n", `unknown key "url" (line 1)`},
		{"top key nested", "redis:\n  heartbeat_grace: 1s\n", `unknown key "redis.heartbeat_grace" (line 2)`},
		{"section not a mapping", "redis: redis://h\n", "redis (line 1): want a mapping of settings, got a single value"},
		{"value is a mapping", "heartbeat_grace:\n  seconds: 30\n", "heartbeat_grace (line 2): want a single value, got a mapping"},
		{"value is a list", "listen: [a, b]\n", "listen (line 1): want a single value, got a list"},
		{"null value", "redis:\n  timeout:\n", "redis.timeout (line 2): no value given; remove the key to use the default"},
		{"duplicate", "jitter: 1s\njitter: 2s\n", `duplicate key "jitter" (line 2, first at line 1)`},
		{"duplicate section", "log:\n  level: info\nlog:\n  level: warn\n", `duplicate key "log" (line 3, first at line 1)`},
		{"top is a list", "- a\n", "want a mapping of settings at the top level, got a list"},
		{"two documents", "jitter: 1s\n---\njitter: 2s\n", "more than one YAML document"},
		{"syntax", "redis: [\n", "yaml: line"},
		{"merge key", "base: &b {level: info}\nlog:\n  <<: *b\n", `unknown key "base"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := load(t, tc.yaml, nil)
			require.Error(t, err)
			require.Contains(t, err.Error(), "config file ")
			require.Contains(t, err.Error(), tc.want)
		})
	}

	// The exact shape of an unknown-key error.
	var c Config
	errs := applyYAML(&c, "config file x.yaml", []byte("redis:\n  urll: x\n"))
	require.Len(t, errs, 1)
	require.EqualError(t, errs[0], `config file x.yaml: unknown key "redis.urll" (line 2)`)
}

func TestYAMLAccepted(t *testing.T) {
	for name, text := range map[string]string{
		"empty":         "",
		"comments only": "# nothing\n",
		"null document": "~\n",
		"empty section": "redis:\nlog: ~\n",
		"quoted values": "redis:\n  scan_count: \"500\"\nmax_dead_fraction: '0.25'\n",
	} {
		t.Run(name, func(t *testing.T) {
			var c Config
			require.Empty(t, applyYAML(&c, "f", []byte(text)))
		})
	}

	// Anchors and aliases are resolved.
	c, err := load(t, "jitter: &d 10s\nfinished_grace: *d\n", nil)
	require.NoError(t, err)
	require.Equal(t, 10*time.Second, c.Pass.FinishedGrace)
}

func TestBadValues(t *testing.T) {
	cases := []struct {
		key, val string
		want     string // the problem, after "SOURCE: "
	}{
		{"heartbeat_grace", "abc", `invalid duration "abc": time: invalid duration "abc"`},
		{"heartbeat_grace", "30", `invalid duration "30": time: missing unit in duration "30"`},
		{"heartbeat_grace", "-1s", "must not be negative, got -1s"},
		{"redis.timeout", "0s", "must be greater than 0, got 0s"},
		{"suspect_ttl", "0", "must be greater than 0, got 0s"},
		{"full_scan_interval", "-5m", "must be greater than 0, got -5m"},
		{"redis.scan_count", "many", `invalid integer "many": invalid syntax`},
		{"redis.scan_count", "0", "must be greater than 0, got 0"},
		{"redis.batch_size", "1.5", `invalid integer "1.5": invalid syntax`},
		{"redis.batch_size", "99999999999999999999", `invalid integer "99999999999999999999": value out of range`},
		{"min_workers", "-1", "must not be negative, got -1"},
		{"max_dead_fraction", "1.5", "must be between 0 and 1, got 1.5"},
		{"max_dead_fraction", "NaN", `invalid number "NaN": not finite`},
		{"max_dead_fraction", "half", `invalid number "half": invalid syntax`},
		{"coordinate_with_pulpcore", "yes", `invalid boolean "yes": want true or false`},
		{"lost_running", "exploded", `invalid value "exploded": want one of canceled, failed`},
		{"orphaned_waiting", "Requeue", `invalid value "Requeue": want one of requeue, cancel`},
		{"log.format", "yaml", `invalid value "yaml": want one of auto, text, json`},
		{"log.level", "trace", `invalid value "trace": want one of debug, info, warn, error`},
		{"output", "xml", `invalid value "xml": want one of text, json, json-pretty`},
		{"schedule", "every minute", `invalid schedule "every minute": expected exactly 5 fields`},
		{"schedule", "@every 0s", `invalid schedule "@every 0s": @every needs a positive duration`},
		{"listen", "9090", `invalid listen address "9090": address 9090: missing port in address`},
		{"pushgateway_url", "ftp://push:9091", `invalid URL "ftp://push:9091": want an http:// or https:// URL`},
		{"pushgateway_url", "http://", `invalid URL "http://": no host`},
		{"redis.url", "http://h:6379", `invalid Redis URL: unsupported scheme "http"`},
		{"redis.url", "localhost:6379", "invalid Redis URL: want redis://"},
		{"redis.url", "redis://h/x", `invalid Redis URL: redis: invalid database number: "x"`},
		{"redis.url", "redis+sentinel://s1:26379/0", "invalid Redis Sentinel URL: master_name query parameter is required"},
		{"database.url", "postgres://h:port/db", "invalid database URL: cannot parse"},
	}
	for _, tc := range cases {
		s := settingByKey[tc.key]
		require.NotNil(t, s, tc.key)
		t.Run(tc.key+"="+strings.ReplaceAll(tc.val, "/", "_"), func(t *testing.T) {
			// Environment.
			_, err := load(t, "", env{s.env(): tc.val})
			require.Error(t, err)
			require.Contains(t, err.Error(), s.env()+": "+tc.want)

			// Flag.
			_, err = load(t, "", nil, "--"+s.flag()+"="+tc.val)
			require.Error(t, err)
			require.Contains(t, err.Error(), "flag --"+s.flag()+": "+tc.want)

			// File: the message names the file, the key and its line.
			_, err = load(t, yamlFor(tc.key, tc.val), nil)
			require.Error(t, err)
			require.Contains(t, err.Error(), "config file ")
			require.Contains(t, err.Error(), tc.key+" (line ")
			require.Contains(t, err.Error(), "): "+tc.want)
		})
	}
}

func TestErrorsAreCollected(t *testing.T) {
	_, err := load(t, "jitter: x\nmin_workers: y\n", env{"REAPER_OUTPUT": "xml"}, "--listen=nope")
	require.Error(t, err)
	for _, want := range []string{"jitter (line 1)", "min_workers (line 2)", "REAPER_OUTPUT:", "flag --listen:"} {
		require.Contains(t, err.Error(), want)
	}
}

func TestCrossChecks(t *testing.T) {
	_, err := load(t, "confirm_after: 2h\n", nil)
	require.EqualError(t, err, "suspect_ttl (1h) must be greater than confirm_after (2h)")

	c, err := load(t, "confirm_after: 2h\n", env{"REAPER_SUSPECT_TTL": "3h"})
	require.NoError(t, err)
	require.Equal(t, 3*time.Hour, c.Pass.SuspectTTL)

	c = Default()
	c.Pass.MinWorkers = -2
	c.Log.Level = "loud"
	err = c.Validate()
	require.ErrorContains(t, err, "min_workers: must not be negative, got -2")
	require.ErrorContains(t, err, `log.level: invalid value "loud"`)
}

func TestFlags(t *testing.T) {
	fs := pflag.NewFlagSet("once", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	dryRun := fs.Bool("dry-run", false, "plan only")
	l := Register(fs)
	force := fs.Bool("force", false, "override guards")
	require.NoError(t, fs.Parse([]string{"--dry-run", "--coordinate-with-pulpcore=false", "--heartbeat-grace", "45s", "--force", "rest"}))
	c, err := l.Load(nil)
	require.NoError(t, err)
	require.True(t, *dryRun)
	require.True(t, *force)
	require.Equal(t, []string{"rest"}, fs.Args())
	require.False(t, c.Pass.CoordinateWithPulpcore)
	require.Equal(t, 45*time.Second, c.Pass.HeartbeatGrace)

	// A bare boolean flag means true.
	c, err = load(t, "coordinate_with_pulpcore: false\n", nil, "--coordinate-with-pulpcore")
	require.NoError(t, err)
	require.True(t, c.Pass.CoordinateWithPulpcore)

	// Help shows kinds, defaults and env names, and no secret.
	var help bytes.Buffer
	fs = pflag.NewFlagSet("help", pflag.ContinueOnError)
	fs.SetOutput(&help)
	Register(fs)
	require.NoError(t, fs.Parse([]string{"--database-url", "postgres://u:secret@h/db"}))
	fs.PrintDefaults()
	require.Contains(t, help.String(), "-heartbeat-grace duration")
	require.Contains(t, help.String(), "REAPER_HEARTBEAT_GRACE")
	require.Contains(t, help.String(), "(default 30s)")
	require.Contains(t, help.String(), "-lost-running canceled|failed")
	require.Equal(t, "postgres://u:xxxxx@h/db", fs.Lookup("database-url").Value.String())
}

func TestWriteYAMLRoundTrip(t *testing.T) {
	c := Default()
	c.Redis.URL = "redis+sentinel://:secret@s1:26379,s2/3?master_name=pulp"
	c.Pass.ScanCount = 250
	c.Pass.RedisTimeout = 1500 * time.Millisecond
	c.Database.URL = "host=db user=pulp password=secret dbname=pulp"
	c.Pass.DatabaseTimeout = 90 * time.Second
	c.Pass.HeartbeatGrace = 0
	c.Pass.ConfirmAfter = 5 * time.Minute
	c.Pass.SuspectTTL = 2*time.Hour + 30*time.Minute
	c.Pass.LostRunning = "failed"
	c.Pass.OrphanedWaiting = "cancel"
	c.Pass.MaxDeadFraction = 0.75
	c.Pass.MinWorkers = 0
	c.Pass.CoordinateWithPulpcore = false
	c.Schedule = "*/5 * * * *"
	c.Jitter = 0
	c.Listen = "127.0.0.1:9100"
	c.PushgatewayURL = "https://ops:secret@push.example:9091/"
	c.Log.Format = "json"
	c.Log.Level = "debug"
	c.Output = "json"
	require.NoError(t, c.Validate())

	var out bytes.Buffer
	require.NoError(t, c.WriteYAML(&out))
	require.NotContains(t, out.String(), "secret")

	// Every key is written.
	var tree map[string]any
	require.NoError(t, yaml.Unmarshal(out.Bytes(), &tree))
	n := 0
	for k, v := range tree {
		if m, ok := v.(map[string]any); ok && sections[k] {
			n += len(m)
		} else {
			n++
		}
	}
	require.Equal(t, len(settings), n)

	got, err := load(t, out.String(), nil)
	require.NoError(t, err)
	require.Equal(t, c.Redacted(), got)

	// And the defaults round-trip too.
	out.Reset()
	require.NoError(t, Default().WriteYAML(&out))
	got, err = load(t, out.String(), nil)
	require.NoError(t, err)
	require.Equal(t, Default(), got)
}

func TestExampleFile(t *testing.T) {
	var buf bytes.Buffer
	require.NoError(t, writeExample(&buf))
	const path = "../../config.yaml.example"
	if *update {
		require.NoError(t, os.WriteFile(path, buf.Bytes(), 0o644))
	}
	have, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, buf.String(), string(have), "config.yaml.example is stale: go test ./config -run TestExampleFile -update")

	// The example sets every key to its default.
	c, err := load(t, string(have), nil)
	require.NoError(t, err)
	require.Equal(t, Default(), c)
	for _, s := range settings {
		require.Contains(t, string(have), s.env(), "example documents %s", s.key)
	}
}

func TestKubernetesSettings(t *testing.T) {
	c, err := load(t, "", map[string]string{
		"REAPER_KUBERNETES_ENABLED": "true", "REAPER_KUBERNETES_NAMESPACE": "pulp",
		"REAPER_KUBERNETES_SELECTOR": "app=pulp-worker", "REAPER_KUBERNETES_HUNG_WORKER_GRACE": "3m",
		"REAPER_KUBERNETES_API_CONTAINER": "pulp-api", "REAPER_KUBERNETES_CLOCK_MARGIN": "500ms",
		"KUBECONFIG": "/home/me/.kube/config:/home/me/.kube/other",
	})
	require.NoError(t, err)
	require.Equal(t, "true", c.Kubernetes.Enabled)
	require.Equal(t, "pulp", c.Kubernetes.Namespace)
	require.Equal(t, "app=pulp-worker", c.Kubernetes.Selector)
	require.Equal(t, 3*time.Minute, c.Pass.Kubernetes.HungWorkerGrace)
	require.Equal(t, "pulp-api", c.Kubernetes.APIContainer)
	require.Equal(t, 500*time.Millisecond, c.Pass.Kubernetes.ClockSkew)
	require.Empty(t, c.Kubernetes.Kubeconfig)
	require.Equal(t, "/home/me/.kube/config:/home/me/.kube/other", c.Kubernetes.KubeconfigEnv, "a list, as kubectl reads it")

	for env, want := range map[string]string{
		"REAPER_KUBERNETES_ENABLED":           "want one of auto, true, false",
		"REAPER_KUBERNETES_SELECTOR":          "invalid label selector",
		"REAPER_KUBERNETES_CONTAINER":         "must not be empty",
		"REAPER_KUBERNETES_HUNG_WORKER_GRACE": "must not be negative",
		"REAPER_KUBERNETES_TIMEOUT":           "must be greater than 0",
		"REAPER_KUBERNETES_API_CONTAINER":     "must not be empty",
		"REAPER_KUBERNETES_CLOCK_MARGIN":      "must be between 0s and 30s",
	} {
		bad := map[string]string{
			"REAPER_KUBERNETES_ENABLED": "maybe", "REAPER_KUBERNETES_SELECTOR": "app in (",
			"REAPER_KUBERNETES_CONTAINER": "", "REAPER_KUBERNETES_HUNG_WORKER_GRACE": "-1s", "REAPER_KUBERNETES_TIMEOUT": "0s",
			"REAPER_KUBERNETES_API_CONTAINER": "", "REAPER_KUBERNETES_CLOCK_MARGIN": "31s",
		}[env]
		_, err := load(t, "", map[string]string{env: bad})
		require.ErrorContains(t, err, want, env)
	}
}
