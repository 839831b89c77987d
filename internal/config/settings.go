package config

import (
	"strings"
	"time"

	"github.com/lock-reaper/lock-reaper/heartbeat/kube"
	"github.com/lock-reaper/lock-reaper/reaper"
)

// Groups order the settings in config.yaml.example and in WriteYAML.
const (
	groupRedis    = "Redis"
	groupDatabase = "PostgreSQL"
	groupJudge    = "Judging locks and tasks"
	groupGuards   = "Safety guards"
	groupKube     = "Kubernetes evidence of liveness"
	groupRun      = "Scheduling and metrics"
	groupOutput   = "Logging and output"
)

// setting is one row of the table: everything the loaders, the flag set,
// WriteYAML and the example file need to know about a configuration key.
type setting struct {
	key   string // dotted YAML key; env and flag names derive from it
	group string
	// def is the default, in the textual form a user would write; empty for
	// a setting of Config.Pass, whose default is reaper.DefaultConfig's.
	def    string
	secret bool // may hold passwords (a URL): they are hidden in Redacted, WriteYAML and error messages
	// password marks a setting whose whole value is a password: hidden
	// entirely wherever secret values are.
	password bool
	doc      string
	binding
}

// env is the setting's environment variable: REAPER_ and the key upper-cased
// with dots turned into underscores.
func (s *setting) env() string {
	return "REAPER_" + strings.ToUpper(strings.ReplaceAll(s.key, ".", "_"))
}

// flag is the setting's flag name: the key with dots and underscores turned
// into dashes.
func (s *setting) flag() string {
	return strings.NewReplacer(".", "-", "_", "-").Replace(s.key)
}

// section is the YAML mapping the key lives in ("" for top-level keys).
func (s *setting) section() string {
	sec, _, ok := strings.Cut(s.key, ".")
	if !ok {
		return ""
	}
	return sec
}

// leaf is the key within its section.
func (s *setting) leaf() string {
	_, leaf, ok := strings.Cut(s.key, ".")
	if !ok {
		return s.key
	}
	return leaf
}

// settings is the table. Its order is the order of the example file and of
// WriteYAML, so keys of one section must stay together (a test checks it).
var settings = []setting{
	{
		key: "redis.url", group: groupRedis, def: "redis://localhost:6379/0", secret: true,
		binding: bind(stringCodec("url"), func(c *Config) *string { return &c.Redis.URL }, checkRedisURL),
		doc: "URL of Pulp's Redis. Schemes: redis://, rediss:// (TLS), unix:///path/to/socket, " +
			"and Sentinel as redis+sentinel://[user:pass@]host:port[,host:port...]/DB?master_name=NAME " +
			"(rediss+sentinel:// for TLS). With Sentinel the user and password authenticate against Redis " +
			"itself; sentinel_username and sentinel_password query parameters authenticate against the " +
			"sentinels; a sentinel without a port uses 26379. go-redis query options such as dial_timeout " +
			"are accepted and win over redis.timeout.",
	},
	{
		key: "redis.host", group: groupRedis,
		binding: bind(stringCodec("host"), func(c *Config) *string { return &c.Redis.Host }, checkHost),
		doc: "Redis host; when set, replaces the host of redis.url (pulp-operator's REDIS_HOST). " +
			"Not for a unix:// or Sentinel redis.url.",
	},
	{
		key: "redis.port", group: groupRedis,
		binding: bind(stringCodec("port"), func(c *Config) *string { return &c.Redis.Port }, checkPort),
		doc: "Redis port; when set, replaces the port of redis.url (pulp-operator's REDIS_PORT). " +
			"Not for a unix:// or Sentinel redis.url.",
	},
	{
		key: "redis.db", group: groupRedis,
		binding: bind(stringCodec("number"), func(c *Config) *string { return &c.Redis.DB }, checkRedisDB),
		doc:     "Redis logical database; when set, replaces the database of redis.url (pulp-operator's REDIS_DB).",
	},
	{
		key: "redis.username", group: groupRedis,
		binding: bind(stringCodec("name"), func(c *Config) *string { return &c.Redis.Username }),
		doc:     "Redis ACL user; when set, replaces the user of redis.url.",
	},
	{
		key: "redis.password", group: groupRedis, password: true,
		binding: bind(stringCodec("password"), func(c *Config) *string { return &c.Redis.Password }),
		doc: "Redis password; when set, replaces the password of redis.url (pulp-operator's REDIS_PASSWORD; " +
			"empty, as for the operator's own Redis, leaves the URL's).",
	},
	{
		key: "redis.tls_ca_file", group: groupRedis,
		binding: bind(stringCodec("path"), func(c *Config) *string { return &c.Redis.TLSCAFile }),
		doc: "PEM file of the CA certificates that verify the Redis server of a rediss:// redis.url, " +
			"instead of the system's.",
	},
	{
		key: "redis.tls_cert_file", group: groupRedis,
		binding: bind(stringCodec("path"), func(c *Config) *string { return &c.Redis.TLSCertFile }),
		doc:     "PEM file of the client certificate lock-reaper presents to a rediss:// Redis; needs redis.tls_key_file.",
	},
	{
		key: "redis.tls_key_file", group: groupRedis,
		binding: bind(stringCodec("path"), func(c *Config) *string { return &c.Redis.TLSKeyFile }),
		doc:     "PEM file of the private key of redis.tls_cert_file.",
	},
	{
		key: "redis.scan_count", group: groupRedis,
		binding: bindPass(intCodec, func(rc *reaper.Config) *int { return &rc.ScanCount }),
		doc:     "COUNT hint of each SCAN call over the keyspace.",
	},
	{
		key: "redis.batch_size", group: groupRedis,
		binding: bindPass(intCodec, func(rc *reaper.Config) *int { return &rc.BatchSize }),
		doc:     "Keys per pipelined read, holdings per release batch and tasks per update statement.",
	},
	{
		key: "redis.release_call_holdings", group: groupRedis,
		binding: bindPass(intCodec, func(rc *reaper.Config) *int { return &rc.ReleaseCallHoldings }),
		doc: "Work of one release (Lua) call, which blocks Redis while it runs, in holdings: 10 registry " +
			"entries a live owner's new-task check counts, or 8 tasks reserving a shared resource, count as one. " +
			"A shared membership whose resource more than (this - 1) × 8 incomplete tasks reserve is deferred.",
	},
	{
		key: "redis.timeout", group: groupRedis,
		binding: bindPass(durationCodec, func(rc *reaper.Config) *time.Duration { return &rc.RedisTimeout }),
		doc:     "Deadline of each Redis call; also the dial, read and write timeout of the connections.",
	},
	{
		key: "database.url", group: groupDatabase, def: "", secret: true,
		binding: bind(stringCodec("url"), func(c *Config) *string { return &c.Database.URL }, checkDatabaseURL),
		doc: "PostgreSQL connection string of Pulp's database, as a postgres:// URL or as " +
			"\"host=... dbname=...\" keywords. Empty: libpq's PG* environment variables " +
			"(PGHOST, PGUSER, PGPASSWORD, ...) and ~/.pgpass apply.",
	},
	{
		key: "database.host", group: groupDatabase,
		binding: bind(stringCodec("host"), func(c *Config) *string { return &c.Database.Host }, checkHost),
		doc: "PostgreSQL host (or socket directory); when set, replaces the host of database.url " +
			"(pulp-operator's host or POSTGRES_HOST secret key).",
	},
	{
		key: "database.port", group: groupDatabase,
		binding: bind(stringCodec("port"), func(c *Config) *string { return &c.Database.Port }, checkPort),
		doc:     "PostgreSQL port; when set, replaces the port of database.url (port or POSTGRES_PORT).",
	},
	{
		key: "database.name", group: groupDatabase,
		binding: bind(stringCodec("name"), func(c *Config) *string { return &c.Database.Name }),
		doc:     "Database name; when set, replaces the one of database.url (database or POSTGRES_DB_NAME).",
	},
	{
		key: "database.user", group: groupDatabase,
		binding: bind(stringCodec("name"), func(c *Config) *string { return &c.Database.User }),
		doc:     "PostgreSQL user; when set, replaces the one of database.url (username or POSTGRES_USERNAME).",
	},
	{
		key: "database.password", group: groupDatabase, password: true,
		binding: bind(stringCodec("password"), func(c *Config) *string { return &c.Database.Password }),
		doc:     "PostgreSQL password; when set, replaces the one of database.url (password or POSTGRES_PASSWORD).",
	},
	{
		key: "database.sslmode", group: groupDatabase,
		binding: bind(stringCodec("mode"), func(c *Config) *string { return &c.Database.SSLMode }, checkSSLMode),
		doc: "libpq sslmode (disable, allow, prefer, require, verify-ca, verify-full); when set, replaces " +
			"the one of database.url (sslmode or POSTGRES_SSLMODE).",
	},
	{
		key: "database.sslrootcert", group: groupDatabase,
		binding: bind(stringCodec("path"), func(c *Config) *string { return &c.Database.SSLRootCert }),
		doc: "PEM file of the CA certificates that verify the PostgreSQL server (with sslmode verify-ca " +
			"or verify-full), or \"system\" for the system's; when set, replaces the one of database.url.",
	},
	{
		key: "database.timeout", group: groupDatabase,
		binding: bindPass(durationCodec, func(rc *reaper.Config) *time.Duration { return &rc.DatabaseTimeout }),
		doc: "Deadline of each statement (set in each of lock-reaper's transactions with SET LOCAL " +
			"statement_timeout, which PgBouncer passes on) and of connecting.",
	},
	{
		key: "database.exec_mode", group: groupDatabase,
		binding: bind(stringCodec("mode"), func(c *Config) *string { return &c.Database.ExecMode }, checkExecMode),
		doc: "How pgx sends queries: cache_statement, cache_describe, describe_exec, exec or " +
			"simple_protocol. Behind PgBouncer in transaction pooling use exec (or simple_protocol): " +
			"the default caches prepared statements per connection, which a transaction pooler " +
			"mixes up. Empty: the URL's default_query_exec_mode, else pgx's default (cache_statement).",
	},
	{
		key: "heartbeat_grace", group: groupJudge,
		binding: bindPass(durationCodec, func(rc *reaper.Config) *time.Duration { return &rc.HeartbeatGrace }),
		doc:     "How long past its expiry a worker's heartbeat may be late before the worker counts as dead.",
	},
	{
		key: "heartbeat_recheck", group: groupJudge,
		binding: bindPass(durationCodec, func(rc *reaper.Config) *time.Duration { return &rc.HeartbeatRecheck }),
		doc: "How long after the read that finds a worker dead a pass reads its heartbeat again before acting on the death " +
			"(a stalled heartbeat write, or a clock behind the database's, looks dead in one read). 0, the default, is the " +
			"row's heartbeat period (ttl/3, at most 40s) and 2s; a shorter time cannot tell a stall from a death.",
	},
	{
		key: "finished_grace", group: groupJudge,
		binding: bindPass(durationCodec, func(rc *reaper.Config) *time.Duration { return &rc.FinishedGrace }),
		doc:     "How long after a task finished its locks are left for its worker to release them itself.",
	},
	{
		key: "confirm_after", group: groupJudge,
		binding: bindPass(durationCodec, func(rc *reaper.Config) *time.Duration { return &rc.ConfirmAfter }),
		doc:     "How long a suspect lock must stay suspect, across passes, before it is released.",
	},
	{
		key: "suspect_ttl", group: groupJudge,
		binding: bindPass(durationCodec, func(rc *reaper.Config) *time.Duration { return &rc.SuspectTTL }),
		doc:     "Expiry of the hash of remembered suspects in Redis. Must be greater than confirm_after.",
	},
	{
		key: "lost_running", group: groupJudge,
		binding: bindPass(stringCodec("canceled|failed"), func(rc *reaper.Config) *string { return &rc.LostRunning }),
		doc:     "State a running task of a dead worker is moved to: canceled, or failed (what pulpcore itself does).",
	},
	{
		key: "orphaned_waiting", group: groupJudge,
		binding: bindPass(stringCodec("requeue|cancel"), func(rc *reaper.Config) *string { return &rc.OrphanedWaiting }),
		doc:     "What happens to a waiting task claimed by a dead worker: requeue (clear the claim) or cancel.",
	},
	{
		key: "max_dead_fraction", group: groupGuards,
		binding: bindPass(floatCodec, func(rc *reaper.Config) *float64 { return &rc.MaxDeadFraction }),
		doc: "Mass-death guard: when more than this fraction (0 to 1) of at least min_workers workers " +
			"is dead, nothing is released on dead-worker grounds and no task is updated (--force overrides).",
	},
	{
		key: "min_workers", group: groupGuards,
		binding: bindPass(intCodec, func(rc *reaper.Config) *int { return &rc.MinWorkers }),
		doc:     "Fewest known workers for the mass-death guard to apply.",
	},
	{
		key: "max_releases", group: groupGuards,
		binding: bindPass(intCodec, func(rc *reaper.Config) *int { return &rc.MaxReleases }),
		doc:     "Most lock holdings released in one pass; the rest waits for the next pass.",
	},
	{
		key: "max_task_updates", group: groupGuards,
		binding: bindPass(intCodec, func(rc *reaper.Config) *int { return &rc.MaxTaskUpdates }),
		doc:     "Most tasks canceled, failed or requeued in one pass; the rest waits for the next pass.",
	},
	{
		key: "coordinate_with_pulpcore", group: groupGuards,
		binding: bindPass(boolCodec, func(rc *reaper.Config) *bool { return &rc.CoordinateWithPulpcore }),
		doc: "Also take pulpcore's worker-cleanup advisory lock for each pass, so the reaper never " +
			"races pulpcore's own cleanup of dead workers.",
	},
	{
		key: "kubernetes.enabled", group: groupKube, def: "auto",
		binding: bind(stringCodec("auto|true|false"), func(c *Config) *string { return &c.Kubernetes.Enabled }, oneOf("auto", "true", "false")),
		doc: "Read the pods of Pulp's workers and API processes once per pass, as a second source of liveness: " +
			"auto (on in a cluster whose service account may list pods), true or false. Outside a cluster, " +
			"--kubeconfig or KUBECONFIG names the cluster to read.",
	},
	{
		key: "kubernetes.namespace", group: groupKube, def: "",
		binding: bind(stringCodec("name"), func(c *Config) *string { return &c.Kubernetes.Namespace }),
		doc:     "Namespace of Pulp's pods. Empty: the reaper's own (its service account's, or the kubeconfig context's).",
	},
	{
		key: "kubernetes.selector", group: groupKube, def: kube.DefaultSelector,
		binding: bind(stringCodec("selector"), func(c *Config) *string { return &c.Kubernetes.Selector }, checkSelector),
		doc: "Label selector of Pulp's worker and API pods; the default is pulp-operator's labels. It must cover every " +
			"Pulp process in the namespace: a pass in which a fresh heartbeat has no pod trusts no pod's absence.",
	},
	{
		key: "kubernetes.container", group: groupKube, def: kube.DefaultContainer,
		binding: bind(stringCodec("name"), func(c *Config) *string { return &c.Kubernetes.Container }, nonEmpty),
		doc:     "Name of the worker container (pulp-operator's is worker); a pod with neither it nor the API container but a single container uses that one.",
	},
	{
		key: "kubernetes.api_container", group: groupKube, def: kube.DefaultAPIContainer,
		binding: bind(stringCodec("name"), func(c *Config) *string { return &c.Kubernetes.APIContainer }, nonEmpty),
		doc: "Name of the API container (pulp-operator's is api; its API pods may also run the otel-collector-sidecar " +
			"container): api rows are judged by this container, worker rows by kubernetes.container.",
	},
	{
		key: "kubernetes.clock_margin", group: groupKube,
		binding: bindPass(durationCodec, func(rc *reaper.Config) *time.Duration { return &rc.Kubernetes.ClockSkew }),
		doc: "Margin between the nodes' clock (container and pod times) and the workers' (heartbeats, row creation), " +
			"0s to 30s: an incarnation's end or a container's start within it of a row's times proves nothing.",
	},
	{
		key: "kubernetes.hung_worker_grace", group: groupKube,
		binding: bindPass(durationCodec, func(rc *reaper.Config) *time.Duration { return &rc.Kubernetes.HungWorkerGrace }),
		doc: "How long past ttl + heartbeat_grace a worker whose container has run since before its heartbeat row " +
			"is kept alive by Kubernetes before the ordinary dead-owner rule applies.",
	},
	{
		key: "kubernetes.timeout", group: groupKube,
		binding: bindPass(durationCodec, func(rc *reaper.Config) *time.Duration { return &rc.KubernetesTimeout }),
		doc:     "Deadline of the pods list of one pass; a pass that cannot read the pods judges by heartbeats alone.",
	},
	{
		key: "schedule", group: groupRun, def: "@every 1m",
		binding: bind(stringCodec("cron"), func(c *Config) *string { return &c.Schedule }, checkSchedule),
		doc:     "When the daemon runs a pass: a 5-field cron expression or a descriptor such as @every 30s or @hourly.",
	},
	{
		key: "jitter", group: groupRun, def: "5s",
		binding: bind(durationCodec, func(c *Config) *time.Duration { return &c.Jitter }, nonNegative),
		doc:     "Random delay up to this long before each scheduled pass, so replicas do not fire together.",
	},
	{
		key: "full_scan_interval", group: groupRun, def: "10m",
		binding: bind(durationCodec, func(c *Config) *time.Duration { return &c.FullScanInterval }, positive),
		doc: "How often a pass scans the whole keyspace instead of only the owners Pulp registered; " +
			"only a full scan finds locks of unregistered owners.",
	},
	{
		key: "heartbeat_poll", group: groupRun, def: "2s",
		binding: bind(durationCodec, func(c *Config) *time.Duration { return &c.HeartbeatPoll }, nonNegative),
		doc: "The shortest wait between the daemon's reads of the worker rows between passes, which start a pass as soon as one crosses " +
			"ttl + heartbeat_grace, a row is deleted or a pending verdict's time comes, and, while the Kubernetes pods are listed by each pass " +
			"rather than watched, once when a row goes past its ttl; the rows are read when the first of them can go stale or cross, " +
			"at least every heartbeat_grace. 0 keeps passes to the schedule.",
	},
	{
		key: "listen", group: groupRun, def: ":9090",
		binding: bind(stringCodec("host:port"), func(c *Config) *string { return &c.Listen }, checkListen),
		doc:     "Address of the daemon's HTTP listener for /metrics and health checks.",
	},
	{
		key: "status_page", group: groupRun, def: "true",
		binding: bind(boolCodec, func(c *Config) *bool { return &c.StatusPage }),
		doc:     "Serve the read-only status page at / on the daemon's listener (it has no login: expose it only through port-forward or an authenticating proxy).",
	},
	{
		// Marked secret although it usually is not: a Pushgateway behind
		// basic auth carries its password in this URL.
		key: "pushgateway_url", group: groupRun, def: "", secret: true,
		binding: bind(stringCodec("url"), func(c *Config) *string { return &c.PushgatewayURL }, checkHTTPURL),
		doc:     "Prometheus Pushgateway (http:// or https:// URL) that one-shot runs push their metrics to. Empty: no push.",
	},
	{
		key: "pushgateway_grouping", group: groupRun, def: "",
		binding: bind(stringCodec("name=value,..."), func(c *Config) *string { return &c.PushgatewayGrouping }, checkPushGrouping),
		doc: "Grouping labels of the push besides job=\"lock_reaper\", as name=value pairs separated by commas " +
			"(e.g. namespace=pulp,instance=pulp-reaper): each reaper pushing to one Pushgateway needs its own group, " +
			"or their pushes replace each other's, and the labels reach every pushed series.",
	},
	{
		key: "log.format", group: groupOutput, def: "auto",
		binding: bind(stringCodec("auto|text|json"), func(c *Config) *string { return &c.Log.Format }, oneOf("auto", "text", "json")),
		doc:     "Log format: text, json, or auto (text on a terminal, json otherwise).",
	},
	{
		key: "log.level", group: groupOutput, def: "info",
		binding: bind(stringCodec("debug|info|warn|error"), func(c *Config) *string { return &c.Log.Level }, oneOf("debug", "info", "warn", "error")),
		doc:     "Lowest level logged: debug, info, warn or error.",
	},
	{
		key: "output", group: groupOutput, def: "text",
		binding: bind(stringCodec("text|json|json-pretty"), func(c *Config) *string { return &c.Output }, oneOf("text", "json", "json-pretty")),
		doc:     "Format of reports printed on standard output: text, json (one line) or json-pretty (indented).",
	},
}

// settingByKey indexes the table for the YAML loader.
var settingByKey = func() map[string]*setting {
	m := make(map[string]*setting, len(settings))
	for i := range settings {
		m[settings[i].key] = &settings[i]
	}
	return m
}()

// sections are the YAML mappings that hold nested keys.
var sections = func() map[string]bool {
	m := map[string]bool{}
	for i := range settings {
		if sec := settings[i].section(); sec != "" {
			m[sec] = true
		}
	}
	return m
}()
