package config

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

func TestRedisURLs(t *testing.T) {
	t.Run("plain", func(t *testing.T) {
		tgt, err := parseRedisURL("redis://user:pw@h:6380/2")
		require.NoError(t, err)
		require.Nil(t, tgt.failover)
		require.Equal(t, "tcp", tgt.plain.Network)
		require.Equal(t, "h:6380", tgt.plain.Addr)
		require.Equal(t, "user", tgt.plain.Username)
		require.Equal(t, "pw", tgt.plain.Password)
		require.Equal(t, 2, tgt.plain.DB)
		require.Nil(t, tgt.plain.TLSConfig)
	})
	t.Run("tls", func(t *testing.T) {
		tgt, err := parseRedisURL("rediss://h:6380/0")
		require.NoError(t, err)
		require.NotNil(t, tgt.plain.TLSConfig)
		require.Equal(t, "h", tgt.plain.TLSConfig.ServerName)
	})
	t.Run("unix", func(t *testing.T) {
		tgt, err := parseRedisURL("unix:///run/redis/redis.sock?db=4")
		require.NoError(t, err)
		require.Equal(t, "unix", tgt.plain.Network)
		require.Equal(t, "/run/redis/redis.sock", tgt.plain.Addr)
		require.Equal(t, 4, tgt.plain.DB)
	})
}

func TestSentinelURLs(t *testing.T) {
	cases := []struct {
		url          string
		master       string
		addrs        []string
		db           int
		user, pass   string
		sUser, sPass string
		tls          bool
	}{
		{
			url: "redis+sentinel://s1:26379,s2:26380/2?master_name=mymaster", master: "mymaster",
			addrs: []string{"s1:26379", "s2:26380"}, db: 2,
		},
		{
			url: "redis+sentinel://s1/0?master_name=m", master: "m",
			addrs: []string{"s1:26379"},
		},
		{
			url: "rediss+sentinel://:pw@s1,[::1],10.0.0.3:5000/1?master_name=m&sentinel_password=spw", master: "m",
			addrs: []string{"s1:26379", "[::1]:26379", "10.0.0.3:5000"}, db: 1, pass: "pw", sPass: "spw", tls: true,
		},
		{
			url: "redis+sentinel://pulp:p%40ss@s1:26379/0?master_name=m&sentinel_username=su&sentinel_password=sp", master: "m",
			addrs: []string{"s1:26379"}, user: "pulp", pass: "p@ss", sUser: "su", sPass: "sp",
		},
		{
			// go-redis options pass through.
			url: "REDIS+SENTINEL://s1:26379?master_name=m&db=5&dial_timeout=2s", master: "m",
			addrs: []string{"s1:26379"}, db: 5,
		},
	}
	for _, tc := range cases {
		t.Run(tc.url, func(t *testing.T) {
			tgt, err := parseRedisURL(tc.url)
			require.NoError(t, err)
			require.Nil(t, tgt.plain)
			o := tgt.failover
			require.Equal(t, tc.master, o.MasterName)
			require.Equal(t, tc.addrs, o.SentinelAddrs)
			require.Equal(t, tc.db, o.DB)
			require.Equal(t, tc.user, o.Username)
			require.Equal(t, tc.pass, o.Password)
			require.Equal(t, tc.sUser, o.SentinelUsername)
			require.Equal(t, tc.sPass, o.SentinelPassword)
			require.Equal(t, tc.tls, o.TLSConfig != nil)
		})
	}

	bad := map[string]string{
		"redis+sentinel://s1:26379/0":                       "master_name query parameter is required",
		"redis+sentinel://s1,,s2/0?master_name=m":           "empty sentinel address",
		"redis+sentinel://s1:port/0?master_name=m":          `invalid sentinel address "s1:port"`,
		"redis+sentinel:///0?master_name=m":                 "empty sentinel address",
		"redis+sentinel://:a@s1/0?master_name=m&password=b": "credentials given both",
		"redis+sentinel://s1/0/1?master_name=m":             "redis: invalid URL path",
		"redis+sentinel://s1/0?master_name=m&bogus=1":       "redis: unexpected option: bogus",
		"redis+sentinel://s1/0?master_name=m;x":             "invalid query",
	}
	for u, want := range bad {
		_, err := parseRedisURL(u)
		require.ErrorContains(t, err, want, u)
		require.ErrorContains(t, err, "invalid Redis Sentinel URL: ", u)
	}
}

func TestNewRedisClient(t *testing.T) {
	c := Default()
	c.Pass.RedisTimeout = 7 * time.Second
	rdb, err := NewRedisClient(c)
	require.NoError(t, err)
	defer rdb.Close()
	o := rdb.(*redis.Client).Options()
	require.Equal(t, "localhost:6379", o.Addr)
	require.Equal(t, 7*time.Second, o.DialTimeout)
	require.Equal(t, 7*time.Second, o.ReadTimeout)
	require.Equal(t, 7*time.Second, o.WriteTimeout)
	require.True(t, o.ContextTimeoutEnabled)

	// An explicit URL option wins over redis.timeout.
	c.Redis.URL = "redis://h:6379/0?read_timeout=1s"
	rdb2, err := NewRedisClient(c)
	require.NoError(t, err)
	defer rdb2.Close()
	o = rdb2.(*redis.Client).Options()
	require.Equal(t, time.Second, o.ReadTimeout)
	require.Equal(t, 7*time.Second, o.WriteTimeout)

	c.Redis.URL = "redis+sentinel://:secret@s1:26379,s2:26379/0?master_name=pulp"
	rdb3, err := NewRedisClient(c)
	require.NoError(t, err)
	require.NoError(t, rdb3.Close())

	c.Redis.URL = "redis://:secret@h:bad/0"
	_, err = NewRedisClient(c)
	require.ErrorContains(t, err, "invalid Redis URL: ")
	require.NotContains(t, err.Error(), "secret")
}

func TestPoolConfig(t *testing.T) {
	c := Default()
	c.Database.URL = "postgres://pulp:pw@db:5433/pulp?sslmode=disable"
	pc, err := PoolConfig(c)
	require.NoError(t, err)
	require.Equal(t, "db", pc.ConnConfig.Host)
	require.Equal(t, uint16(5433), pc.ConnConfig.Port)
	_, sent := pc.ConnConfig.RuntimeParams["statement_timeout"]
	require.False(t, sent, "no statement_timeout startup parameter: PgBouncer refuses it")
	require.Equal(t, pgx.QueryExecModeCacheStatement, pc.ConnConfig.DefaultQueryExecMode)
	require.Equal(t, "lock-reaper", pc.ConnConfig.RuntimeParams["application_name"])
	require.Equal(t, 10*time.Second, pc.ConnConfig.ConnectTimeout)

	// What the connection string says wins.
	c.Database.URL = "host=db user=pulp password=pw application_name=ops statement_timeout=500 connect_timeout=3 sslmode=disable"
	c.Pass.DatabaseTimeout = 1500 * time.Microsecond
	pc, err = PoolConfig(c)
	require.NoError(t, err)
	require.Equal(t, "500", pc.ConnConfig.RuntimeParams["statement_timeout"])
	require.Equal(t, "ops", pc.ConnConfig.RuntimeParams["application_name"])
	require.Equal(t, 3*time.Second, pc.ConnConfig.ConnectTimeout)

	// pgx's own URL parameter works; database.exec_mode wins over it.
	c.Database.URL = "postgres://db/pulp?default_query_exec_mode=simple_protocol"
	pc, err = PoolConfig(c)
	require.NoError(t, err)
	require.Equal(t, pgx.QueryExecModeSimpleProtocol, pc.ConnConfig.DefaultQueryExecMode)
	c.Database.ExecMode = "exec"
	pc, err = PoolConfig(c)
	require.NoError(t, err)
	require.Equal(t, pgx.QueryExecModeExec, pc.ConnConfig.DefaultQueryExecMode)
	c.Database.ExecMode = "prepared"
	_, err = PoolConfig(c)
	require.ErrorContains(t, err, `invalid value "prepared"`)
	c.Database.ExecMode = ""

	// Empty: libpq's environment variables apply.
	t.Setenv("PGHOST", "pg.example")
	t.Setenv("PGPORT", "5499")
	t.Setenv("PGDATABASE", "pulpdb")
	t.Setenv("PGSSLMODE", "disable")
	c.Database.URL = ""
	pc, err = PoolConfig(c)
	require.NoError(t, err)
	require.Equal(t, "pg.example", pc.ConnConfig.Host)
	require.Equal(t, uint16(5499), pc.ConnConfig.Port)
	require.Equal(t, "pulpdb", pc.ConnConfig.Database)

	c.Database.URL = "postgres://u:secret@h:port/db"
	_, err = PoolConfig(c)
	require.ErrorContains(t, err, "invalid database URL: ")
	require.NotContains(t, err.Error(), "secret")
}

func TestRedact(t *testing.T) {
	cases := map[string]string{
		"postgres://u:secret@h/db":                      "postgres://u:xxxxx@h/db",
		"redis://:secret@h:6379/0":                      "redis://:xxxxx@h:6379/0",
		"host=h password=secret":                        "host=h password=xxxxx",
		"host=h password='se cret' dbname=x":            "host=h password=xxxxx dbname=x",
		`host=h password='it\'s' user=u`:                "host=h password=xxxxx user=u",
		"host=h password = secret user=u":               "host=h password = xxxxx user=u",
		"host=h sslpassword=secret":                     "host=h sslpassword=xxxxx",
		"postgres://u@h/db?sslmode=require&password=s3": "postgres://u@h/db?sslmode=require&password=xxxxx",
		"postgres://u:@h/db":                            "postgres://u:xxxxx@h/db",
		"https://ops:pa%2Fss@push:9091/x?y=1#frag":      "https://ops:xxxxx@push:9091/x?y=1#frag",
		"unix://u:secret@/run/redis.sock?db=1":          "unix://u:xxxxx@/run/redis.sock?db=1",
		"redis://:pa/ss@h/0":                            "redis://:xxxxx@h/0",
		"postgres://u:p@ss@h/db":                        "postgres://u:xxxxx@h/db",
		"redis://h:6379/0":                              "redis://h:6379/0",
		"postgres://u@h/db":                             "postgres://u@h/db",
		"unix:///run/user@1000/redis.sock":              "unix:///run/user@1000/redis.sock",
		"":                                              "",
		"host=h dbname=pulp":                            "host=h dbname=pulp",
		"redis+sentinel://:secret@s1:26379,s2:26379/0?master_name=m&sentinel_password=secret2": "redis+sentinel://:xxxxx@s1:26379,s2:26379/0?master_name=m&sentinel_password=xxxxx",
	}
	for in, want := range cases {
		require.Equal(t, want, redactSecret(in), in)
	}

	// For URLs net/url can parse, the userinfo is hidden as url.URL.Redacted
	// hides it.
	for _, in := range []string{"postgres://u:secret@h/db", "redis://:secret@h:6379/0", "rediss://user@h", "redis://h"} {
		u, err := url.Parse(in)
		require.NoError(t, err)
		require.Equal(t, u.Redacted(), redactSecret(in))
	}

	c := Default()
	c.Redis.URL = "redis://:secret@h:6379/0"
	c.Database.URL = "host=h password=secret"
	c.PushgatewayURL = "http://u:secret@push:9091"
	r := c.Redacted()
	require.Equal(t, "redis://:xxxxx@h:6379/0", r.Redis.URL)
	require.Equal(t, "host=h password=xxxxx", r.Database.URL)
	require.Equal(t, "http://u:xxxxx@push:9091", r.PushgatewayURL)
	require.Equal(t, "redis://:secret@h:6379/0", c.Redis.URL, "the original is untouched")
	require.NoError(t, r.Validate(), "a redacted config still validates")
}

// TestSecretsStayOutOfErrors feeds broken secret values through every source
// and checks that no message quotes their password.
func TestSecretsStayOutOfErrors(t *testing.T) {
	bad := map[string][]string{
		"redis.url": {
			"redis://:secret@h:bad/0",
			"redis://u:secret@h/notadb",
			"redis://:secret@h/0?bogus=1",
			"rediss://:secret@[::1/0",
			"redis://:sec%zzret@h/0",
			"ftp://:secret@h",
			"redis+sentinel://:secret@s1:x/0?master_name=m",
			"redis+sentinel://:secret@s1/0",
			"redis+sentinel://u:secret@s1/0?master_name=m&password=secret",
			"redis+sentinel://s1/0?master_name=m&sentinel_password=secret&bogus=1",
			"redis://:se\"cret@h:bad/0",
			"redis://:secret/more@h:bad/0",
		},
		"database.url": {
			"postgres://u:secret@h:port/db",
			"postgres://u:secret@h/db?sslmode=bogus",
			"postgres://u:secret@h/db?pool_max_conns=x",
			"postgres://u:sec%zzret@h/db",
			"host=h password=secret port=x",
			"host=h password='secret port=x",
			"host=h password=secret sslmode=bogus",
			"postgres://u@h/db?password=secret&sslmode=bogus",
		},
		"pushgateway_url": {
			"ftp://u:secret@push",
			"http://u:secret@push:bad",
			"http://u:secret@",
		},
	}
	for key, vals := range bad {
		s := settingByKey[key]
		for i, v := range vals {
			// The value stays out of the test's name: t.TempDir is named
			// after the test, and config file errors quote its path.
			t.Run(fmt.Sprintf("%s#%d", key, i), func(t *testing.T) {
				_, err := load(t, "", env{s.env(): v})
				require.ErrorContains(t, err, s.env()+": ")
				require.NotContains(t, err.Error(), "secret")

				_, err = load(t, "", nil, "--"+s.flag(), v)
				require.ErrorContains(t, err, "flag --"+s.flag()+": ")
				require.NotContains(t, err.Error(), "secret")

				_, err = load(t, yamlFor(key, v), nil)
				require.ErrorContains(t, err, key+" (line ")
				require.NotContains(t, err.Error(), "secret")

				c := Default()
				require.NoError(t, s.set(&c, v))
				err = c.Validate()
				require.ErrorContains(t, err, key+": ")
				require.NotContains(t, err.Error(), "secret")
				require.False(t, strings.Contains(redactSecret(v), "secret"), "redaction hides it too")
			})
		}
	}
}
