package redislocks

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/redis/go-redis/v9"
)

// A batch's values are read only once their lengths are known: one MGET of a
// thousand keys holding a megabyte each would fetch a gigabyte, outlast the
// call's deadline and the container's memory, where an owner name is never
// longer than MaxOwnerLen. So the lengths come first (STRLEN, pipelined: no
// command gives them for many keys at once, and a script costs Redis several
// times more per key), and a value too long to be an owner name is reported
// as ignored without being read. A batch so fetches at most BatchSize ×
// MaxOwnerLen bytes of values.

// notString is the length sizes gives a key that holds no string.
const notString = -1

// sizes returns the length of each key's string value: 0 for a key that is
// gone, notString for one of another type. A user whose ACL predates
// +strlen gets zeros (every value read whole, as before) and one warning.
func (rr *Reader) sizes(ctx context.Context, keys []string) ([]int64, error) {
	out := make([]int64, len(keys))
	if rr.noSTRLEN {
		return out, nil
	}
	cctx, cancel := context.WithTimeout(ctx, rr.Timeout)
	defer cancel()
	pipe := rr.RDB.Pipeline()
	cmds := make([]*redis.IntCmd, len(keys))
	for i, k := range keys {
		cmds[i] = pipe.StrLen(cctx, k)
	}
	_, err := pipe.Exec(cctx)
	if isNoPerm(err) {
		rr.noSTRLEN = true
		if rr.Log != nil {
			rr.Log.Warn("the Redis user may not run STRLEN: lock values are read without their length checked first, so a huge value under a lock key is read whole; add +strlen to its ACL (docs/security.md, The Redis ACL user)",
				slog.String("error", err.Error()))
		}
		return out, nil
	}
	if err != nil && !isWrongType(err) {
		return nil, fmt.Errorf("read lengths of lock values: %w", err)
	}
	for i, c := range cmds {
		n, err := c.Result()
		switch {
		case err == nil:
			out[i] = n
		case isWrongType(err):
			out[i] = notString
		default:
			return nil, fmt.Errorf("read length of %q: %w", keys[i], err)
		}
	}
	return out, nil
}

// tooLongReason is why a value longer than MaxOwnerLen is ignored unread.
func tooLongReason(n int64) string {
	return fmt.Sprintf("value of %d bytes, not read: owner name longer than %d bytes", n, MaxOwnerLen)
}
