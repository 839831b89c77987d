package cli

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
)

// targets say, in an operator's words and without any password, which Redis
// and which PostgreSQL a command talks to, for its error messages and for
// `config`.
type targets struct {
	redis    string // e.g. "127.0.0.1:6379 (database 0)"
	database string // e.g. "127.0.0.1:5432, database pulp, user pulp"
	// databaseUser is the role database.url logs in as, which a hint's
	// GRANT statements name.
	databaseUser string
}

// redisTarget describes the Redis a client of redisURL talks to.
func redisTarget(redisURL string, rdb redis.UniversalClient) string {
	if u, err := url.Parse(redisURL); err == nil && strings.Contains(strings.ToLower(u.Scheme), "sentinel") {
		hosts := strings.Split(u.Host, ",")
		for i, h := range hosts {
			if _, _, err := net.SplitHostPort(h); err != nil {
				hosts[i] = net.JoinHostPort(h, "26379")
			}
		}
		db := strings.Trim(u.Path, "/")
		if db == "" {
			db = "0"
		}
		s := fmt.Sprintf("Sentinel %s (master %q, database %s", strings.Join(hosts, ","), u.Query().Get("master_name"), db)
		if name := u.User.Username(); name != "" {
			s += ", user " + name
		}
		return s + ")"
	}
	c, ok := rdb.(*redis.Client)
	if !ok {
		return "redis.url"
	}
	o := c.Options()
	where := o.Addr
	if o.Network == "unix" {
		where = "socket " + o.Addr
	}
	s := fmt.Sprintf("%s (database %d", where, o.DB)
	if o.Username != "" {
		s += ", user " + o.Username
	}
	if o.TLSConfig != nil {
		s += ", TLS"
	}
	return s + ")"
}

// databaseTarget describes where a pool of pc connects: the settings as
// pgx resolved them from database.url, libpq's PG* variables and defaults.
func databaseTarget(pc *pgxpool.Config) string {
	cc := pc.ConnConfig
	return fmt.Sprintf("%s, database %s, user %s", hostText(cc.Host, cc.Port), databaseName(cc.Database, cc.User), cc.User)
}

// databaseName is the database a session opens: PostgreSQL takes the
// user's name when none is given.
func databaseName(db, user string) string {
	if db == "" {
		return user + " (none set: the user's name)"
	}
	return db
}

func hostText(host string, port uint16) string {
	if strings.HasPrefix(host, "/") {
		return fmt.Sprintf("socket %s/.s.PGSQL.%d", host, port)
	}
	return net.JoinHostPort(host, strconv.Itoa(int(port)))
}

// databaseResolved lists what database.url resolves to, one "name: value"
// pair per line, the password only as set or not.
func databaseResolved(pc *pgxpool.Config) [][2]string {
	cc := pc.ConnConfig
	hosts := []string{hostText(cc.Host, cc.Port)}
	for _, fb := range cc.Fallbacks {
		if h := hostText(fb.Host, fb.Port); h != hosts[len(hosts)-1] {
			hosts = append(hosts, h)
		}
	}
	password := "(none)"
	if cc.Password != "" {
		password = "xxxxx (set)"
	}
	rows := [][2]string{
		{"host", strings.Join(hosts, ", ")},
		{"database", databaseName(cc.Database, cc.User)},
		{"user", cc.User},
		{"password", password},
		{"tls", tlsText(&cc.Config)},
	}
	if v := cc.RuntimeParams["statement_timeout"]; v != "" {
		rows = append(rows, [2]string{"statement_timeout", v + "ms"})
	}
	return rows
}

// tlsText reads the sslmode back from what pgx made of it.
func tlsText(c *pgconn.Config) string {
	plainFallback := false
	for _, fb := range c.Fallbacks {
		if fb.TLSConfig == nil {
			plainFallback = true
		}
	}
	switch {
	case c.TLSConfig == nil && len(c.Fallbacks) > 0 && !plainFallback:
		return "tried without TLS first, then with it (sslmode=allow)"
	case c.TLSConfig == nil:
		return "off (sslmode=disable)"
	case plainFallback:
		return "tried first, then without TLS when the server refuses it (sslmode=prefer, libpq's default)"
	case c.TLSConfig.InsecureSkipVerify && c.TLSConfig.VerifyPeerCertificate == nil:
		return "required, certificate not verified (sslmode=require)"
	case c.TLSConfig.InsecureSkipVerify:
		return "required, certificate verified against the CA (sslmode=verify-ca)"
	default:
		return "required, certificate and host name verified (sslmode=verify-full)"
	}
}
