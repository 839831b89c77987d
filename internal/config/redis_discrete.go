package config

import (
	"crypto/tls"
	"errors"
	"net"
	"strconv"
)

// applyRedisSettings applies the discrete Redis settings and the TLS files
// to the parsed redis.url: each setting that is not empty overrides its part
// of the URL.
func applyRedisSettings(c Config, t redisTarget) error {
	r := c.Redis
	db := -1
	if r.DB != "" {
		n, err := strconv.Atoi(r.DB)
		if err != nil {
			return errors.New("redis.db: not a number") // checkRedisDB catches it first
		}
		db = n
	}
	if o := t.failover; o != nil {
		// A Sentinel URL names the sentinels, not Redis: redis.host and
		// redis.port would be ambiguous. The credentials and the database
		// are the master's, as in the URL.
		if r.Host != "" || r.Port != "" {
			return errors.New("redis.host and redis.port do not apply to a Sentinel redis.url: list the sentinels in the URL")
		}
		return overrideConnection(c, db, &o.Username, &o.Password, &o.DB, &o.TLSConfig)
	}
	o := t.plain
	if r.Host != "" || r.Port != "" {
		if o.Network == "unix" {
			return errors.New("redis.host and redis.port do not apply to a unix:// redis.url")
		}
		host, port, err := net.SplitHostPort(o.Addr)
		if err != nil {
			return errors.New("redis.url: no host:port to override")
		}
		if r.Host != "" {
			// rediss:// verifies the server's name against the URL's host;
			// the host that is dialled is the one to verify.
			if o.TLSConfig != nil && o.TLSConfig.ServerName == host {
				o.TLSConfig.ServerName = r.Host
			}
			host = r.Host
		}
		if r.Port != "" {
			port = r.Port
		}
		o.Addr = net.JoinHostPort(host, port)
	}
	return overrideConnection(c, db, &o.Username, &o.Password, &o.DB, &o.TLSConfig)
}

// overrideConnection applies what a plain Redis and a Sentinel's master
// share: the credentials, the database (db < 0 keeps the URL's) and the TLS
// files.
func overrideConnection(c Config, db int, user, pass *string, dbOf *int, tlsOf **tls.Config) error {
	overrideCredentials(c.Redis.Username, c.Redis.Password, user, pass)
	if db >= 0 {
		*dbOf = db
	}
	tc, err := redisTLS(c, *tlsOf)
	if err != nil {
		return err
	}
	*tlsOf = tc
	return nil
}

func overrideCredentials(username, password string, user, pass *string) {
	if username != "" {
		*user = username
	}
	if password != "" {
		*pass = password
	}
}

// checkRedisConn validates the URL together with the discrete settings and
// the TLS files, once the URL alone is known to be valid.
func checkRedisConn(c Config) error {
	t, err := parseRedisURL(c.Redis.URL)
	if err != nil {
		return nil // reported under redis.url
	}
	return scrubPasswords(applyRedisSettings(c, t), c.Redis.Password)
}
