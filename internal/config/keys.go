package config

// Key describes one configuration key for the command line's help: the
// settings table, exported read-only.
type Key struct {
	Key     string // dotted YAML key, e.g. redis.url
	Flag    string // flag name without dashes, e.g. redis-url
	Env     string // environment variable, e.g. REAPER_REDIS_URL (also as _FILE)
	Group   string // the heading it is listed under, e.g. "Redis"
	Kind    string // what the value is, e.g. duration
	Default string // the default as `lock-reaper config` prints it ("" for none)
	Doc     string
	Secret  bool
}

// GroupRun is the group of the daemon's scheduling and metrics keys, which
// only `run` uses (and pushgateway_url and pushgateway_grouping, which only
// one-shot passes use).
const GroupRun = groupRun

// Keys lists every configuration key in the table's order.
func Keys() []Key {
	def := Default()
	keys := make([]Key, len(settings))
	for i := range settings {
		s := &settings[i]
		keys[i] = s.keyOf(&def)
	}
	return keys
}

// keyOf is the setting as Keys lists it; def is Default().
func (s *setting) keyOf(def *Config) Key {
	return Key{
		Key: s.key, Flag: s.flag(), Env: s.env(), Group: s.group, Kind: s.kind,
		Default: s.get(def), Doc: s.doc, Secret: s.secret,
	}
}

// ConfigFlag and ConfigEnv name where the configuration file is given.
const (
	ConfigFlag = "config"
	ConfigEnv  = configEnv
)
