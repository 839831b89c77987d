package config

import (
	"bytes"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// awkward is a password with every character that URL and keyword/value
// quoting must survive.
const awkward = `p&ss=w?rd#'\ /x:y@z+%`

// TestDatabaseDiscreteOverridesURL: each discrete setting replaces its part
// of database.url, in both connection string forms, and leaves the rest.
func TestDatabaseDiscreteOverridesURL(t *testing.T) {
	t.Parallel()
	for _, url := range []string{
		"postgres://urluser:urlpass@urlhost:5433/urldb?sslmode=disable&application_name=mine",
		"host=urlhost port=5433 dbname=urldb user=urluser password=urlpass sslmode=disable application_name=mine",
	} {
		t.Run("nothing set", func(t *testing.T) {
			c := Default()
			c.Database.URL = url
			cc := poolConn(t, c)
			require.Equal(t, "urlhost", cc.Host)
			require.Equal(t, uint16(5433), cc.Port)
			require.Equal(t, "urldb", cc.Database)
			require.Equal(t, "urluser", cc.User)
			require.Equal(t, "urlpass", cc.Password)
		})
		t.Run("host and password", func(t *testing.T) {
			c := Default()
			c.Database.URL = url
			c.Database.Host = "pulp-database-svc"
			c.Database.Password = awkward
			cc := poolConn(t, c)
			require.Equal(t, "pulp-database-svc", cc.Host)
			require.Equal(t, uint16(5433), cc.Port, "the URL's port stays")
			require.Equal(t, "urldb", cc.Database)
			require.Equal(t, "urluser", cc.User)
			require.Equal(t, awkward, cc.Password)
			require.Equal(t, "mine", cc.RuntimeParams["application_name"], "other URL parameters stay")
		})
		t.Run("everything", func(t *testing.T) {
			c := Default()
			c.Database.URL = url
			c.Database.Host, c.Database.Port, c.Database.Name = "h2", "6543", "pulp"
			c.Database.User, c.Database.Password, c.Database.SSLMode = "pulp", "s3cret", "require"
			cc := poolConn(t, c)
			require.Equal(t, "h2", cc.Host)
			require.Equal(t, uint16(6543), cc.Port)
			require.Equal(t, "pulp", cc.Database)
			require.Equal(t, "pulp", cc.User)
			require.Equal(t, "s3cret", cc.Password)
			require.NotNil(t, cc.TLSConfig, "sslmode=require replaced disable")
			require.Empty(t, cc.Fallbacks, "require has no plain-text fallback")
		})
	}
	t.Run("no URL", func(t *testing.T) {
		c := Default()
		c.Database.Host, c.Database.Port, c.Database.Name, c.Database.User = "pulp-database-svc", "5432", "pulp", "pulp"
		c.Database.Password, c.Database.SSLMode = awkward, "disable"
		cc := poolConn(t, c)
		require.Equal(t, "pulp-database-svc", cc.Host)
		require.Equal(t, "pulp", cc.Database)
		require.Equal(t, awkward, cc.Password)
		require.Nil(t, cc.TLSConfig)
	})
}

// TestDatabaseSSLRootCert: database.sslrootcert makes a verify-full
// connection trust exactly that CA, and a missing file is an error at start
// that names the settings.
func TestDatabaseSSLRootCert(t *testing.T) {
	t.Parallel()
	pki := newTestPKI(t)
	c := Default()
	c.Database.URL = "postgres://pulp@db.example:5432/pulp"
	c.Database.SSLMode, c.Database.SSLRootCert = "verify-full", pki.CA
	require.NoError(t, c.Validate())
	cc := poolConn(t, c)
	require.NotNil(t, cc.TLSConfig)
	require.NotNil(t, cc.TLSConfig.RootCAs)
	require.Equal(t, "db.example", cc.TLSConfig.ServerName)

	c.Database.SSLRootCert = pki.CA + ".missing"
	err := c.Validate()
	require.Error(t, err)
	require.Contains(t, err.Error(), "database settings")

	// The error quotes the connection string, which never holds the
	// discrete password, in either form, and keeps the path readable.
	for _, url := range []string{"postgres://pulp@db.example:5432/pulp", "host=db.example dbname=pulp"} {
		c.Database.URL, c.Database.Password = url, awkward
		err := c.Validate()
		require.Error(t, err)
		require.Contains(t, err.Error(), pki.CA+".missing")
		for _, piece := range []string{"p&ss", "w?rd", "/x:y", "y@z", "z+%"} {
			require.NotContains(t, err.Error(), piece, url)
		}
		_, err = PoolConfig(c)
		require.Error(t, err)
		require.NotContains(t, err.Error(), "p&ss")
	}
}

// TestRedisDiscreteOverridesURL: each discrete setting replaces its part of
// redis.url and leaves the rest.
func TestRedisDiscreteOverridesURL(t *testing.T) {
	t.Parallel()
	opts := func(t *testing.T, c Config) *redis.Options {
		t.Helper()
		require.NoError(t, c.Validate())
		rdb, err := NewRedisClient(c)
		require.NoError(t, err)
		t.Cleanup(func() { _ = rdb.Close() })
		return rdb.(*redis.Client).Options()
	}
	c := Default()
	c.Redis.URL = "redis://urluser:urlpass@urlhost:6380/2"
	o := opts(t, c)
	require.Equal(t, "urlhost:6380", o.Addr)
	require.Equal(t, 2, o.DB)

	c.Redis.Host, c.Redis.Password = "pulp-redis-svc.pulp", awkward
	o = opts(t, c)
	require.Equal(t, "pulp-redis-svc.pulp:6380", o.Addr, "the URL's port stays")
	require.Equal(t, 2, o.DB)
	require.Equal(t, "urluser", o.Username)
	require.Equal(t, awkward, o.Password)

	c.Redis.Port, c.Redis.DB, c.Redis.Username = "6379", "0", "reaper"
	o = opts(t, c)
	require.Equal(t, "pulp-redis-svc.pulp:6379", o.Addr)
	require.Equal(t, 0, o.DB, "an explicit 0 replaces the URL's 2")
	require.Equal(t, "reaper", o.Username)

	// The default URL with only the discrete settings of pulp-operator's
	// external cache Secret.
	c = Default()
	c.Redis.Host, c.Redis.Port, c.Redis.DB = "10.0.0.7", "6390", "3"
	o = opts(t, c)
	require.Equal(t, "10.0.0.7:6390", o.Addr)
	require.Equal(t, 3, o.DB)
	require.Empty(t, o.Password)
	require.Nil(t, o.TLSConfig)

	// With rediss://, the name verified is the host dialled.
	c = Default()
	c.Redis.URL = "rediss://urlhost:6380/0"
	c.Redis.Host = "redis.pulp.svc"
	o = opts(t, c)
	require.Equal(t, "redis.pulp.svc", o.TLSConfig.ServerName)

	// Sentinel: the credentials and the database are the master's.
	c = Default()
	c.Redis.URL = "redis+sentinel://s1:26379,s2/1?master_name=mymaster"
	c.Redis.Password, c.Redis.DB = "masterpass", "5"
	require.NoError(t, c.Validate())
	tgt, err := parseRedisURL(c.Redis.URL)
	require.NoError(t, err)
	require.NoError(t, applyRedisSettings(c, tgt))
	require.Equal(t, "masterpass", tgt.failover.Password)
	require.Equal(t, 5, tgt.failover.DB)
}

// TestDiscreteSettingErrors: a bad discrete setting stops the program with
// its key and never shows a password.
func TestDiscreteSettingErrors(t *testing.T) {
	t.Parallel()
	pki := newTestPKI(t)
	cases := []struct {
		name string
		env  env
		want string
	}{
		{"port not a number", env{"REAPER_DATABASE_PORT": "pg"}, "REAPER_DATABASE_PORT: invalid port"},
		{"port out of range", env{"REAPER_REDIS_PORT": "70000"}, "REAPER_REDIS_PORT: invalid port"},
		{"db negative", env{"REAPER_REDIS_DB": "-1"}, "REAPER_REDIS_DB: invalid Redis database"},
		{"sslmode", env{"REAPER_DATABASE_SSLMODE": "verify"}, "REAPER_DATABASE_SSLMODE: invalid value"},
		{"host with a blank", env{"REAPER_DATABASE_HOST": "a b"}, "REAPER_DATABASE_HOST: invalid host"},
		{"host on a unix socket URL", env{"REAPER_REDIS_URL": "unix:///run/redis.sock", "REAPER_REDIS_HOST": "h"}, "do not apply to a unix://"},
		{"host on a Sentinel URL", env{"REAPER_REDIS_URL": "redis+sentinel://s1/0?master_name=m", "REAPER_REDIS_PORT": "1"}, "do not apply to a Sentinel"},
		{"CA without rediss", env{"REAPER_REDIS_TLS_CA_FILE": pki.CA}, "need a rediss:// redis.url"},
		{"missing CA file", env{"REAPER_REDIS_URL": "rediss://h:6379/0", "REAPER_REDIS_TLS_CA_FILE": pki.CA + ".missing"}, "redis.tls_ca_file"},
		{"CA file not PEM", env{"REAPER_REDIS_URL": "rediss://h:6379/0", "REAPER_REDIS_TLS_CA_FILE": pki.ServerKey}, "holds no PEM certificate"},
		{"cert without key", env{"REAPER_REDIS_URL": "rediss://h:6379/0", "REAPER_REDIS_TLS_CERT_FILE": pki.ClientCert}, "give both or neither"},
		{"key of another cert", env{"REAPER_REDIS_URL": "rediss://h:6379/0", "REAPER_REDIS_TLS_CERT_FILE": pki.ClientCert, "REAPER_REDIS_TLS_KEY_FILE": pki.ServerKey}, "redis.tls_cert_file and redis.tls_key_file"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.env["REAPER_REDIS_PASSWORD"] = "hunter2-redis"
			tc.env["REAPER_DATABASE_PASSWORD"] = "hunter2-db"
			_, err := load(t, "", tc.env)
			require.Error(t, err)
			require.Contains(t, err.Error(), tc.want)
			require.NotContains(t, err.Error(), "hunter2")
		})
	}
}

// TestPulpOperatorSecrets: the keys of pulp-operator's Secrets, mounted as
// files and named by REAPER_*_FILE variables, make a complete configuration
// whose passwords are never printed.
func TestPulpOperatorSecrets(t *testing.T) {
	t.Parallel()
	// <cr>-postgres-configuration, as the operator writes it, and an
	// external cache Secret whose REDIS_PASSWORD is set.
	secret := map[string]string{
		"host": "pulp-database-svc", "port": "5432", "database": "pulp", "username": "pulp",
		"password": awkward, "sslmode": "prefer",
		"REDIS_HOST": "redis.example", "REDIS_PORT": "6380", "REDIS_PASSWORD": "r3dis-" + awkward, "REDIS_DB": "1",
	}
	e := env{}
	for envName, key := range map[string]string{
		"REAPER_DATABASE_HOST": "host", "REAPER_DATABASE_PORT": "port", "REAPER_DATABASE_NAME": "database",
		"REAPER_DATABASE_USER": "username", "REAPER_DATABASE_PASSWORD": "password", "REAPER_DATABASE_SSLMODE": "sslmode",
		"REAPER_REDIS_HOST": "REDIS_HOST", "REAPER_REDIS_PORT": "REDIS_PORT", "REAPER_REDIS_PASSWORD": "REDIS_PASSWORD",
		"REAPER_REDIS_DB": "REDIS_DB",
	} {
		// Kubernetes mounts each key as a file; kubectl-created values
		// often end in a newline, which _FILE trims.
		e[envName+"_FILE"] = writeFile(t, key, secret[key]+"\n")
	}
	c, err := load(t, "", e)
	require.NoError(t, err)

	cc := poolConn(t, c)
	require.Equal(t, "pulp-database-svc", cc.Host)
	require.Equal(t, uint16(5432), cc.Port)
	require.Equal(t, "pulp", cc.Database)
	require.Equal(t, "pulp", cc.User)
	require.Equal(t, awkward, cc.Password)

	rdb, err := NewRedisClient(c)
	require.NoError(t, err)
	defer rdb.Close()
	o := rdb.(*redis.Client).Options()
	require.Equal(t, "redis.example:6380", o.Addr)
	require.Equal(t, 1, o.DB)
	require.Equal(t, "r3dis-"+awkward, o.Password)

	// `lock-reaper config` prints the redacted YAML.
	var out bytes.Buffer
	require.NoError(t, c.WriteYAML(&out))
	require.NotContains(t, out.String(), "p&ss")
	require.Contains(t, out.String(), "password: xxxxx")
	r := c.Redacted()
	require.Equal(t, "xxxxx", r.Database.Password)
	require.Equal(t, "xxxxx", r.Redis.Password)
	require.Equal(t, "pulp-database-svc", r.Database.Host)

	// An empty password (the operator's own Redis has none) keeps the URL's.
	e = env{"REAPER_REDIS_URL": "redis://:urlpass@h:6379/0", "REAPER_REDIS_PASSWORD_FILE": writeFile(t, "empty", "")}
	c, err = load(t, "", e)
	require.NoError(t, err)
	rdb, err = NewRedisClient(c)
	require.NoError(t, err)
	defer rdb.Close()
	require.Equal(t, "urlpass", rdb.(*redis.Client).Options().Password)
}

// TestDiscretePrecedence: a discrete setting overrides the URL's part
// whichever source each came from, and among sources of the same setting the
// usual order holds.
func TestDiscretePrecedence(t *testing.T) {
	t.Parallel()
	// The URL from a flag, the host from the file: the host still wins.
	c, err := load(t, "database:\n  host: filehost\n", env{"REAPER_DATABASE_PORT": "7000"},
		"--database-url", "postgres://u@flaghost:5433/db", "--database-port", "7001")
	require.NoError(t, err)
	cc := poolConn(t, c)
	require.Equal(t, "filehost", cc.Host)
	require.Equal(t, uint16(7001), cc.Port, "the flag beats the environment")
	require.Equal(t, "db", cc.Database)

	// Flag help and errors never show a password given on the command line.
	_, err = load(t, "", nil, "--database-password", "hunter2", "--database-port", "x")
	require.Error(t, err)
	require.NotContains(t, err.Error(), "hunter2")
}

func poolConn(t *testing.T, c Config) *pgx.ConnConfig {
	t.Helper()
	require.NoError(t, c.Validate())
	pc, err := PoolConfig(c)
	require.NoError(t, err)
	return pc.ConnConfig
}
