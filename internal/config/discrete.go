package config

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"
)

// Discrete connection settings (database.host, redis.port, ...) exist beside
// the URLs because deployments keep connection details as separate keys:
// pulp-operator's Secrets hold host, port, database, username, password and
// sslmode (or POSTGRES_* and REDIS_* keys), which a pod can mount or map to
// environment variables one by one but cannot join into a URL. Each one,
// when not empty, overrides that part of the URL, wherever either was set;
// empty means "not set", since a Secret key may be present but empty (the
// operator's own Redis has no password).

// checkHost accepts an empty value or a host name, an IP address or, for
// PostgreSQL, a socket directory.
func checkHost(s string) error {
	if strings.IndexFunc(s, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0 {
		return fmt.Errorf("invalid host %q: contains a blank or control character", s)
	}
	return nil
}

// checkPort accepts an empty value or a TCP port.
func checkPort(s string) error {
	if s == "" {
		return nil
	}
	if n, err := strconv.Atoi(s); err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("invalid port %q: want a number from 1 to 65535", s)
	}
	return nil
}

// checkRedisDB accepts an empty value or a logical database number.
func checkRedisDB(s string) error {
	if s == "" {
		return nil
	}
	if n, err := strconv.Atoi(s); err != nil || n < 0 {
		return fmt.Errorf("invalid Redis database %q: want a number from 0", s)
	}
	return nil
}

// sslModes are libpq's sslmode values.
var sslModes = []string{"disable", "allow", "prefer", "require", "verify-ca", "verify-full"}

func checkSSLMode(s string) error {
	if s == "" {
		return nil
	}
	return oneOf(sslModes...)(s)
}

// redact returns what may be shown of a value of the setting.
func (s *setting) redact(v string) string {
	switch {
	case s.password && v != "":
		return redactedPassword
	case s.secret:
		return redactSecret(v)
	}
	return v
}

// sensitive says the setting's value may hold a password.
func (s *setting) sensitive() bool { return s.secret || s.password }

// scrubErr hides the setting's value raw in err, as far as it is secret.
func (s *setting) scrubErr(err error, raw string) error {
	if err == nil {
		return nil
	}
	switch {
	case s.password:
		return scrubPasswords(err, raw)
	case s.secret:
		return scrubError(err, raw)
	}
	return err
}

// scrubPasswords hides each of the passwords, as they are, in err's message.
func scrubPasswords(err error, passwords ...string) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	for _, p := range passwords {
		if p != "" {
			msg = strings.ReplaceAll(msg, p, redactedPassword)
		}
	}
	return &scrubbedError{msg: msg, err: err}
}

// errNotBoth is returned when two settings that go together are not given
// together.
var errNotBoth = errors.New("give both or neither")
