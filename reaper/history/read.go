package history

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// Bounds of a read. Anyone who may write under the reaper's prefix may
// write the list, so a read takes nothing on trust: an entry's length is
// known before it is sent, and the whole read has a size.
const (
	// MaxEntryBytes bounds one entry as read: a pass's own is a few hundred
	// bytes, an error message included. A longer one is skipped, unread.
	MaxEntryBytes = 4 << 10
	// MaxReadBytes bounds the entries one read keeps in all: Cap passes of
	// the reaper's own fit in it several times over.
	MaxReadBytes = 1 << 20
	// readSlice is how many entries one call of the script looks at, so
	// that Redis copies a few, not the whole list, for one call.
	readSlice = 50
)

// boundedEntries returns the entries of KEYS[1] at positions ARGV[1] to
// ARGV[2] each as itself when at most ARGV[3] bytes long, else as its
// length (an integer), and stops at the end of the list: an entry over the
// bound never leaves Redis. It only reads the list, with LRANGE, which the
// reaper's ACL allows.
var boundedEntries = redis.NewScript(`
local out = {}
local from, to, bound = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
for i = from, to do
  local v = redis.call('LRANGE', KEYS[1], i, i)[1]
  if not v then break end
  if #v <= bound then out[#out + 1] = v else out[#out + 1] = #v end
end
return out
`)

// Passes is the history of passes as read.
type Passes struct {
	// Entries are the passes read, newest first.
	Entries []Entry
	// Oversized counts the entries over MaxEntryBytes, left unread;
	// LargestBytes is the length of the largest of them.
	Oversized    int
	LargestBytes int64
	// Undecoded counts the entries that are no pass (not JSON, no time).
	Undecoded int
	// Unread counts the entries left unread once the read kept
	// MaxReadBytes of them.
	Unread int
}

// Skipped says some entries were left out, and why, for a page to say so;
// "" when none was.
func (p Passes) Skipped() string {
	var s string
	add := func(part string) {
		if s != "" {
			s += "; "
		}
		s += part
	}
	if p.Oversized > 0 {
		add(fmt.Sprintf("%d entries longer than %d bytes (the largest %d) skipped unread", p.Oversized, MaxEntryBytes, p.LargestBytes))
	}
	if p.Undecoded > 0 {
		add(fmt.Sprintf("%d entries that are no pass skipped", p.Undecoded))
	}
	if p.Unread > 0 {
		add(fmt.Sprintf("%d older entries not read, past %d bytes of entries", p.Unread, MaxReadBytes))
	}
	return s
}

// Read reads at most limit passes (all kept when limit <= 0, up to Cap and
// MaxReadBytes), newest first, that started at or after since (any time
// when since is zero). An entry over MaxEntryBytes, or that does not
// decode, is counted and left out: the history informs, it decides nothing,
// and whoever wrote it may not make a reader hold it.
func Read(ctx context.Context, rdb redis.UniversalClient, prefix string, since time.Time, limit int) (Passes, error) {
	if limit <= 0 || limit > Cap {
		limit = Cap
	}
	key := Key(prefix)
	var p Passes
	kept := 0
	for from := 0; from < limit; from += readSlice {
		to := min(from+readSlice, limit) - 1
		raw, err := boundedEntries.Run(ctx, rdb, []string{key}, from, to, MaxEntryBytes).Slice()
		if err == redis.Nil {
			break
		}
		if err != nil {
			return p, fmt.Errorf("read the passes in %s: %w", key, err)
		}
		for i, r := range raw {
			b, ok := r.(string)
			if !ok {
				n, _ := r.(int64)
				p.Oversized++
				p.LargestBytes = max(p.LargestBytes, n)
				continue
			}
			if kept+len(b) > MaxReadBytes {
				p.Unread = len(raw) - i
				if n, err := rdb.LLen(ctx, key).Result(); err == nil {
					p.Unread = int(min(n, int64(limit))) - from - i
				}
				return p, nil
			}
			kept += len(b)
			var e Entry
			if json.Unmarshal([]byte(b), &e) != nil || e.At.IsZero() {
				p.Undecoded++
				continue
			}
			// Not a break: entries are pushed when a pass ends, so a long
			// pass may follow a later short one.
			if !since.IsZero() && e.At.Before(since) {
				continue
			}
			p.Entries = append(p.Entries, e)
		}
		if len(raw) < to-from+1 {
			break
		}
	}
	return p, nil
}

// Recent reads the passes as Read does, without what it left out.
func Recent(ctx context.Context, rdb redis.UniversalClient, prefix string, since time.Time, limit int) ([]Entry, error) {
	p, err := Read(ctx, rdb, prefix, since, limit)
	if p.Entries == nil && err == nil {
		p.Entries = []Entry{}
	}
	return p.Entries, err
}
