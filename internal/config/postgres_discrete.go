package config

import (
	"strings"
)

// databaseParams are the discrete database settings as libpq keywords, in a
// fixed order; empty values are left out. database.password is not one: it
// is set on the parsed configuration instead (PoolConfig), so that it is in
// no connection string that a parse error could quote.
func databaseParams(c Config) [][2]string {
	d := c.Database
	all := [][2]string{
		{"host", d.Host}, {"port", d.Port}, {"dbname", d.Name}, {"user", d.User},
		{"sslmode", d.SSLMode}, {"sslrootcert", d.SSLRootCert},
	}
	var set [][2]string
	for _, p := range all {
		if p[1] != "" {
			set = append(set, p)
		}
	}
	return set
}

// databaseConnString is database.url with the discrete settings but the
// password applied.
// pgx lets a URL's query parameters override its host, port, user,
// password and database, and a later keyword win over an earlier one in the
// keyword/value form, so appending the settings overrides exactly those
// parts and leaves the rest of the URL (and the PG* variables for what
// neither sets) in effect.
func databaseConnString(c Config) string {
	s := c.Database.URL
	params := databaseParams(c)
	if len(params) == 0 {
		return s
	}
	var b strings.Builder
	b.WriteString(s)
	if isPostgresURL(s) {
		sep := "?"
		if strings.Contains(s, "?") {
			sep = "&"
		}
		for _, p := range params {
			b.WriteString(sep + p[0] + "=" + percentEncode(p[1]))
			sep = "&"
		}
		return b.String()
	}
	for _, p := range params {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(p[0] + "=" + quoteKeywordValue(p[1]))
	}
	return b.String()
}

func isPostgresURL(s string) bool {
	return strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://")
}

// percentEncode escapes every byte but the unreserved ones of RFC 3986, so a
// value holding '&', '=', '+' or '#' stays one query value.
func percentEncode(s string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("-._~", c) >= 0 {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&15])
	}
	return b.String()
}

// quoteKeywordValue quotes a value for libpq's keyword/value form.
func quoteKeywordValue(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}
