// Package history keeps a short summary of each pass in Redis, under the
// reaper's own key prefix, so that any reaper's status page (a daemon's, or
// `lock-reaper status` on a laptop) can say when a reaper last passed and
// what it did, CronJob passes included: a CronJob leaves no process behind
// to ask.
//
// The list is capped and expires, so a reaper that stops leaves nothing
// behind for long. Writing it is never part of a pass's work: callers log a
// failure and go on.
package history

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/redis/go-redis/v9"
)

// DefaultPrefix is the reaper's own key prefix, the one its Redis ACL user
// may write under (internal/privilege/redis.acl: ~pulp:lock_reaper:*).
const DefaultPrefix = "pulp:lock_reaper:"

const (
	// Cap is how many passes the list keeps: a day of passes a minute
	// apart, and more, in about 300 KB.
	Cap = 2000
	// TTL is how long the list outlives the last pass written to it.
	TTL = 7 * 24 * time.Hour
	// maxRecordedError bounds the error an entry records: with the rest of
	// the entry (and JSON's escapes of a few characters) it stays well
	// within MaxEntryBytes.
	maxRecordedError = 1 << 10
)

// Key is the list of passes under prefix, newest first.
func Key(prefix string) string { return prefix + "passes" }

// Entry is one pass as the history keeps it.
type Entry struct {
	// At is when the pass started.
	At time.Time `json:"time"`
	// Mode is what ran it: once, run (a daemon's pass) or release.
	Mode     string        `json:"mode"`
	Duration time.Duration `json:"-"`
	// Stale counts the holdings the pass found stale or suspect.
	Stale    int `json:"stale"`
	Released int `json:"released"`
	// Updated counts the tasks the pass cancelled or requeued.
	Updated int `json:"updated"`
	// Guards names the guards that held work back.
	Guards []string `json:"guards,omitempty"`
	// Error says why the pass failed; empty when it completed.
	Error string `json:"error,omitempty"`
}

// MarshalJSON writes an entry as stored: the time in RFC 3339 (what a
// person reading the list with redis-cli, and the page's <time datetime>,
// expect) and the duration in milliseconds.
func (e Entry) MarshalJSON() ([]byte, error) {
	type plain Entry
	return json.Marshal(struct {
		plain
		At         string `json:"time"`
		DurationMS int64  `json:"duration_ms"`
	}{plain(e), e.At.UTC().Format(time.RFC3339Nano), e.Duration.Milliseconds()})
}

// UnmarshalJSON reads the stored form.
func (e *Entry) UnmarshalJSON(b []byte) error {
	type plain Entry
	var s struct {
		plain
		DurationMS int64 `json:"duration_ms"`
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	*e = Entry(s.plain)
	e.Duration = time.Duration(s.DurationMS) * time.Millisecond
	return nil
}

// Record adds e to the front of the list under prefix, trims the list to
// Cap and sets its expiry, in one MULTI so that a reader never sees it
// untrimmed or without an expiry.
//
// A long error is cut to maxRecordedError bytes (at a rune's start), so
// that the reaper's own entry always stays within what a reader reads
// (MaxEntryBytes).
func Record(ctx context.Context, rdb redis.UniversalClient, prefix string, e Entry) error {
	if len(e.Error) > maxRecordedError {
		cut := maxRecordedError
		for cut > 0 && !utf8.RuneStart(e.Error[cut]) {
			cut--
		}
		e.Error = e.Error[:cut] + "…"
	}
	b, err := json.Marshal(e)
	if err != nil {
		return err
	}
	key := Key(prefix)
	_, err = rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.LPush(ctx, key, b)
		p.LTrim(ctx, key, 0, Cap-1)
		p.Expire(ctx, key, TTL)
		return nil
	})
	if err != nil {
		return fmt.Errorf("record the pass in %s: %w", key, err)
	}
	return nil
}
