package doctor

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// info is one section of INFO as field -> value.
type info map[string]string

// readInfo reads one INFO section.
func readInfo(ctx context.Context, rdb redis.UniversalClient, section string) (info, error) {
	text, err := rdb.Info(ctx, section).Result()
	if err != nil {
		return nil, fmt.Errorf("INFO %s: %w", section, err)
	}
	return parseInfo(text), nil
}

// parseInfo reads INFO's "field:value" lines; comments and blanks are skipped.
func parseInfo(text string) info {
	out := info{}
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if k, v, ok := strings.Cut(line, ":"); ok {
			out[k] = v
		}
	}
	return out
}

// int reads a numeric field; ok is false when it is absent or not a number.
func (in info) int(field string) (int64, bool) {
	v, err := strconv.ParseInt(in[field], 10, 64)
	return v, err == nil
}

// version is a dotted version as numbers: "7.0.15" -> [7 0 15].
type version []int

// parseVersion reads the leading numeric parts of a version string:
// "3.117.0.dev" -> [3 117 0]; nil when it starts with no number.
func parseVersion(s string) version {
	var out version
	for _, part := range strings.Split(strings.TrimSpace(s), ".") {
		n, err := strconv.Atoi(part)
		if err != nil {
			break
		}
		out = append(out, n)
	}
	return out
}

// atLeast compares numerically, missing parts counting as 0.
func (v version) atLeast(min version) bool {
	for i := 0; i < max(len(v), len(min)); i++ {
		a, b := 0, 0
		if i < len(v) {
			a = v[i]
		}
		if i < len(min) {
			b = min[i]
		}
		if a != b {
			return a > b
		}
	}
	return true
}

func (v version) String() string {
	parts := make([]string, len(v))
	for i, n := range v {
		parts[i] = strconv.Itoa(n)
	}
	return strings.Join(parts, ".")
}

// isNoPerm says Redis refused a command under the connection's ACL user.
func isNoPerm(err error) bool {
	return err != nil && strings.HasPrefix(err.Error(), "NOPERM")
}
