package config

import (
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode"
)

// redactedPassword replaces passwords, as url.URL.Redacted does.
const redactedPassword = "xxxxx"

// redactSecret hides the passwords of a URL or of a key=value connection
// string. It works on the text rather than on a parsed URL because the values
// that most need hiding are those that do not parse: they end up in error
// messages. Everything but the passwords is kept byte for byte, so a redacted
// value still parses the same way.
func redactSecret(s string) string {
	if i := strings.Index(s, "://"); i >= 0 {
		return redactURL(s, i+len("://"))
	}
	return redactDSN(s)
}

// redactURL hides the userinfo password and password-like query values of a
// URL whose authority starts at offset start.
func redactURL(s string, start int) string {
	rest := s[start:]
	var b strings.Builder
	b.WriteString(s[:start])
	_, err := url.Parse(s)
	if at := userinfoEnd(rest, err == nil); at >= 0 {
		user, _, hasPass := strings.Cut(rest[:at], ":")
		b.WriteString(user)
		if hasPass {
			b.WriteString(":" + redactedPassword)
		}
		rest = rest[at:]
	}
	tail, fragment := rest, ""
	if i := strings.IndexByte(tail, '#'); i >= 0 {
		tail, fragment = tail[:i], tail[i:]
	}
	if i := strings.IndexByte(tail, '?'); i >= 0 {
		tail = tail[:i+1] + redactQuery(tail[i+1:])
	}
	b.WriteString(tail)
	b.WriteString(fragment)
	return b.String()
}

// userinfoEnd returns the offset of the '@' that ends the userinfo in the
// text after "://", or -1. By the standard the authority ends at the first
// '/', '?' or '#', and the userinfo at the authority's last '@'. A password
// holding a raw '/', '?' or '#' (base64 passwords have '/') ends the
// authority early, though, and parsers then quote pieces of it in their
// errors. So when the authority has no '@' but "user:pass@" can still be read
// further on, that reading wins: hiding a little too much of a broken value
// beats showing a password. For a URL that parses, the '@' must come before
// the query, or "?application_name=me@host" would pass for a password.
func userinfoEnd(rest string, parses bool) int {
	authority := rest
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		authority = rest[:i]
	}
	if at := strings.LastIndexByte(authority, '@'); at >= 0 {
		return at
	}
	scope := rest
	if i := strings.IndexAny(rest, "?#"); parses && i >= 0 {
		scope = rest[:i]
	}
	if at := strings.LastIndexByte(scope, '@'); at >= 0 && strings.Contains(rest[:at], ":") {
		return at
	}
	return -1
}

// redactQuery hides the value of every query parameter whose name mentions a
// password (password, sslpassword, sentinel_password).
func redactQuery(q string) string {
	parts := strings.Split(q, "&")
	for i, p := range parts {
		k, _, ok := strings.Cut(p, "=")
		if !ok {
			continue
		}
		name, err := url.QueryUnescape(k)
		if err != nil {
			name = k
		}
		if strings.Contains(strings.ToLower(name), "password") {
			parts[i] = k + "=" + redactedPassword
		}
	}
	return strings.Join(parts, "&")
}

// dsnPassword matches a password keyword of a libpq key=value string and its
// value: quoted (possibly unterminated, then to the end) or up to whitespace.
// libpq skips blanks after '=', so "password= x" has the password "x".
var dsnPassword = regexp.MustCompile(`(?i)(\w*password\s*=\s*)('(?:[^'\\]|\\.)*(?:'|\\?$)|\S*)`)

func redactDSN(s string) string {
	return dsnPassword.ReplaceAllString(s, "${1}"+redactedPassword)
}

// queryPassword finds the values of password-like query parameters.
var queryPassword = regexp.MustCompile(`(?i)password=([^&#]*)`)

// secretTokens lists every substring of a secret value that may be a
// password, in the spellings an error message could quote it in. It errs on
// the side of listing too much: a false positive only masks a bit of an
// error message.
func secretTokens(raw string) []string {
	var cands []string
	if i := strings.Index(raw, "://"); i >= 0 {
		rest := raw[i+3:]
		// Parsers disagree on which '@' ends the userinfo (net/url takes the
		// authority's last, pgconn the first before a '/'), and broken
		// values have no right answer: take every reading.
		for at := strings.IndexByte(rest, '@'); at >= 0; {
			if _, pass, ok := strings.Cut(rest[:at], ":"); ok {
				cands = append(cands, pass)
			}
			next := strings.IndexByte(rest[at+1:], '@')
			if next < 0 {
				break
			}
			at += 1 + next
		}
	}
	for _, m := range queryPassword.FindAllStringSubmatch(raw, -1) {
		cands = append(cands, m[1])
	}
	for _, m := range dsnPassword.FindAllStringSubmatch(raw, -1) {
		cands = append(cands, m[2], strings.Trim(m[2], "'"))
	}

	seen := map[string]bool{}
	var out []string
	add := func(t string, minLen int) {
		if len(t) >= minLen && t != redactedPassword && !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	for _, c := range cands {
		for _, v := range []string{c, unescape(url.PathUnescape, c), unescape(url.QueryUnescape, c)} {
			add(v, 1)
			// A parser that split the password on some delimiter quotes a
			// piece of it, such as the "port" after a ':' it took for a
			// host's. Any punctuation may be a delimiter to some parser, so
			// every alphanumeric run is a token; runs under 3 bytes give
			// little away and would garble messages.
			for _, piece := range strings.FieldsFunc(v, isDelimiter) {
				add(piece, 3)
			}
		}
	}
	// Messages often quote with %q, which escapes some bytes.
	for _, t := range append([]string(nil), out...) {
		q := strconv.Quote(t)
		add(q[1:len(q)-1], 1)
	}
	// Longest first, so a token is not half-masked by one of its substrings.
	sort.SliceStable(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out
}

func isDelimiter(r rune) bool {
	return !unicode.IsLetter(r) && !unicode.IsDigit(r)
}

// unescape returns the unescaped form of s, or s when it does not unescape.
func unescape(f func(string) (string, error), s string) string {
	if u, err := f(s); err == nil {
		return u
	}
	return s
}

// scrub removes a secret value's passwords from a message.
func scrub(msg, raw string) string {
	if raw == "" {
		return msg
	}
	msg = strings.ReplaceAll(msg, raw, redactSecret(raw))
	for _, t := range secretTokens(raw) {
		msg = strings.ReplaceAll(msg, t, redactedPassword)
	}
	return msg
}

// scrubbedError is an error whose text has had a secret value's passwords
// removed. It still unwraps to the original, for errors.Is and errors.As.
type scrubbedError struct {
	msg string
	err error
}

func (e *scrubbedError) Error() string { return e.msg }
func (e *scrubbedError) Unwrap() error { return e.err }

// scrubError hides raw's passwords in err's message.
func scrubError(err error, raw string) error {
	if err == nil {
		return nil
	}
	return &scrubbedError{msg: scrub(err.Error(), raw), err: err}
}
