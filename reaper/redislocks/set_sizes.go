package redislocks

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/redis/go-redis/v9"
)

// A set's memory (MEMORY USAGE, which samples a few members of a large
// set) and its size (SCARD) are read with its type, before its members: the
// member script (set_members.go) walks a set of long members in pages of
// fewer, and a user that may not run that script has such a set reported as
// ignored without being read (SSCAN answers a small set whole whatever its
// COUNT: a set of long members would be fetched in one reply).

// maxMemberAverage is the most memory per member of a set that can hold
// owner names: the longest name and Redis's own per-member overhead, twice
// over.
const maxMemberAverage = 2 * MaxOwnerLen

// keyShape is what is known of a key that holds no string before its
// members are read.
type keyShape struct {
	typ string
	// members and bytes are a set's SCARD and MEMORY USAGE; each is 0 when
	// it is unknown (the user may not run the command).
	members, bytes int64
}

// shapes reads each key's type and, for a set, its size and memory.
func (rr *Reader) shapes(ctx context.Context, keys []string) ([]keyShape, error) {
	cctx, cancel := context.WithTimeout(ctx, rr.Timeout)
	defer cancel()
	pipe := rr.RDB.Pipeline()
	types := make([]*redis.StatusCmd, len(keys))
	cards := make([]*redis.IntCmd, len(keys))
	usage := make([]*redis.IntCmd, len(keys))
	for i, k := range keys {
		types[i] = pipe.Type(cctx, k)
		cards[i] = pipe.SCard(cctx, k)
		if !rr.noMemoryUsage {
			usage[i] = pipe.MemoryUsage(cctx, k)
		}
	}
	// Each command's own error is looked at below.
	_, _ = pipe.Exec(cctx)
	out := make([]keyShape, len(keys))
	for i, k := range keys {
		typ, err := types[i].Result()
		if err != nil {
			return nil, fmt.Errorf("read type of %q: %w", k, err)
		}
		out[i].typ = typ
		if typ != "set" {
			continue
		}
		// A user refused SCARD reads the set as it is; the release names
		// the command it lacks.
		if out[i].members, err = cards[i].Result(); err != nil && !isWrongType(err) && !isNoPerm(err) {
			return nil, fmt.Errorf("read size of %q: %w", k, err)
		}
		if usage[i] == nil {
			continue
		}
		n, err := usage[i].Result()
		switch {
		case err == nil:
			out[i].bytes = n
		case isNoPerm(err):
			rr.noMemoryUsage = true
			if rr.Log != nil {
				rr.Log.Warn("the Redis user may not run MEMORY USAGE: shared locks' sets are walked without their size checked first, in pages of a thousand members however long they are (Redis copies a page into the reading script's memory); add +memory|usage to its ACL (docs/security.md, The Redis ACL user)",
					slog.String("error", err.Error()))
			}
		case errors.Is(err, redis.Nil), isWrongType(err):
			// Gone or changed since its type was read: looked at again.
		default:
			return nil, fmt.Errorf("read memory of %q: %w", k, err)
		}
	}
	return out, nil
}

// tooLongMembers says why a set is not read with SSCAN: its members
// average more than maxMemberAverage bytes; "" when it may hold owner names.
func (s keyShape) tooLongMembers() string {
	if s.members <= 0 || s.bytes/s.members <= maxMemberAverage {
		return ""
	}
	return fmt.Sprintf("set of %d members taking %d bytes, not read: an owner name is at most %d bytes", s.members, s.bytes, MaxOwnerLen)
}
