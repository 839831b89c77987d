package config

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// sentinelPort is Redis Sentinel's well-known port, used for sentinels given
// without one.
const sentinelPort = "26379"

// redisTarget is a parsed redis.url: exactly one of the two is set.
type redisTarget struct {
	plain    *redis.Options
	failover *redis.FailoverOptions
}

// NewRedisClient connects (lazily, as go-redis does) to the Redis of
// redis.url, with the discrete settings (redis.host, redis.password, ...)
// overriding their parts of it and the TLS files applied: a plain, TLS or
// unix-socket client, or a Sentinel failover client. redis.timeout becomes the dial, read and write timeout unless the
// URL sets those itself, and context deadlines are honoured.
func NewRedisClient(c Config) (redis.UniversalClient, error) {
	t, err := parseRedisURL(c.Redis.URL)
	if err != nil {
		// No "redis.url:" prefix: callers name the setting themselves.
		return nil, scrubError(err, c.Redis.URL)
	}
	if err := applyRedisSettings(c, t); err != nil {
		return nil, scrubPasswords(err, c.Redis.Password)
	}
	if o := t.failover; o != nil {
		applyTimeout(c.Pass.RedisTimeout, &o.DialTimeout, &o.ReadTimeout, &o.WriteTimeout)
		o.ContextTimeoutEnabled = true
		// The Sentinels and the primary alike are dialed so.
		o.Dialer = redisDialer(&redis.Options{TLSConfig: o.TLSConfig, DialTimeout: o.DialTimeout})
		return redis.NewFailoverClient(o), nil
	}
	o := t.plain
	applyTimeout(c.Pass.RedisTimeout, &o.DialTimeout, &o.ReadTimeout, &o.WriteTimeout)
	o.ContextTimeoutEnabled = true
	// A URL whose scheme does not match the server's TLS is named at once.
	o.Dialer = redisDialer(o)
	return redis.NewClient(o), nil
}

// applyTimeout fills the timeouts the URL left unset.
func applyTimeout(d time.Duration, fields ...*time.Duration) {
	for _, f := range fields {
		if *f == 0 {
			*f = d
		}
	}
}

// checkRedisURL validates redis.url the way NewRedisClient will use it.
func checkRedisURL(s string) error {
	_, err := parseRedisURL(s)
	return err
}

var schemeSyntax = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*$`)

// parseRedisURL parses redis.url with go-redis itself, so what is accepted
// here is exactly what connects. Errors may quote parts of the URL: callers
// scrub them.
func parseRedisURL(s string) (redisTarget, error) {
	scheme, rest, ok := strings.Cut(s, "://")
	if !ok {
		return redisTarget{}, errors.New("invalid Redis URL: want redis://, rediss://, unix://, redis+sentinel:// or rediss+sentinel://")
	}
	switch strings.ToLower(scheme) {
	case "redis", "rediss", "unix":
		o, err := redis.ParseURL(s)
		if err != nil {
			return redisTarget{}, fmt.Errorf("invalid Redis URL: %w", cleanURLError(err))
		}
		return redisTarget{plain: o}, nil
	case "redis+sentinel", "rediss+sentinel":
		fu, err := failoverURL(strings.TrimSuffix(strings.ToLower(scheme), "+sentinel"), rest)
		if err != nil {
			return redisTarget{}, fmt.Errorf("invalid Redis Sentinel URL: %w", err)
		}
		o, err := redis.ParseFailoverURL(fu)
		if err != nil {
			return redisTarget{}, fmt.Errorf("invalid Redis Sentinel URL: %w", cleanURLError(err))
		}
		return redisTarget{failover: o}, nil
	default:
		if !schemeSyntax.MatchString(scheme) {
			return redisTarget{}, errors.New("invalid Redis URL: malformed scheme")
		}
		return redisTarget{}, fmt.Errorf("invalid Redis URL: unsupported scheme %q: want redis, rediss, unix, redis+sentinel or rediss+sentinel", scheme)
	}
}

// failoverURL translates our Sentinel URL, which lists every sentinel in the
// authority like most Redis clients do, into the form go-redis's
// ParseFailoverURL wants: the first sentinel as host, the others as addr
// parameters, the sentinels' credentials as userinfo and Redis's own
// credentials as username and password parameters.
func failoverURL(scheme, rest string) (string, error) {
	authority, tail := rest, ""
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		authority, tail = rest[:i], rest[i:]
	}
	userinfo, hostList, hasUser := "", authority, false
	if i := strings.LastIndexByte(authority, '@'); i >= 0 {
		userinfo, hostList, hasUser = authority[:i], authority[i+1:], true
	}

	// net/url parses path and query behind a placeholder host, so their
	// escaping rules stay the standard ones.
	pu, err := url.Parse(scheme + "://sentinel" + tail)
	if err != nil {
		return "", cleanURLError(err)
	}
	q, err := url.ParseQuery(pu.RawQuery)
	if err != nil {
		return "", fmt.Errorf("invalid query: %w", err)
	}
	if q.Get("master_name") == "" {
		return "", errors.New("master_name query parameter is required")
	}

	var addrs []string
	for _, h := range strings.Split(hostList, ",") {
		addr, err := sentinelAddr(h)
		if err != nil {
			return "", err
		}
		addrs = append(addrs, addr)
	}

	if hasUser {
		ui, err := url.Parse(scheme + "://" + userinfo + "@sentinel")
		if err != nil || ui.User == nil {
			return "", errors.New("invalid user info")
		}
		if q.Has("username") || q.Has("password") {
			return "", errors.New("credentials given both before the host and as username/password parameters")
		}
		if name := ui.User.Username(); name != "" {
			q.Set("username", name)
		}
		if pass, ok := ui.User.Password(); ok {
			q.Set("password", pass)
		}
	}
	var sentinelUser *url.Userinfo
	if q.Has("sentinel_username") || q.Has("sentinel_password") {
		name, pass := q.Get("sentinel_username"), q.Get("sentinel_password")
		q.Del("sentinel_username")
		q.Del("sentinel_password")
		sentinelUser = url.UserPassword(name, pass)
	}
	for _, a := range addrs[1:] {
		q.Add("addr", a)
	}

	u := url.URL{
		Scheme:   scheme,
		User:     sentinelUser,
		Host:     addrs[0],
		Path:     pu.Path,
		RawPath:  pu.RawPath,
		RawQuery: q.Encode(),
	}
	return u.String(), nil
}

// sentinelAddr normalizes one host[:port] of the sentinel list to host:port.
func sentinelAddr(h string) (string, error) {
	if h == "" {
		return "", errors.New("empty sentinel address")
	}
	host, port, err := net.SplitHostPort(h)
	if err != nil {
		// No port: strip the brackets of an IPv6 literal and use the default.
		host, port = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]"), sentinelPort
		if strings.ContainsAny(host, "[]") {
			return "", fmt.Errorf("invalid sentinel address %q", h)
		}
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 || host == "" || strings.ContainsAny(host, "/?#@ ") {
		return "", fmt.Errorf("invalid sentinel address %q", h)
	}
	return net.JoinHostPort(host, port), nil
}
