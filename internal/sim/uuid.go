package sim

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	mrand "math/rand/v2"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
)

// NewUUID returns a random version 4 UUID in canonical lowercase text form,
// the form pulpcore uses in task keys.
func NewUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails since Go 1.24.
	return formatUUID(b)
}

// NewUUID7 returns a version 7 UUID created at t, as pulpcore names its rows
// since pulp_uuid (pulpcore/app/models/base.py): the first 48 bits are
// milliseconds since the Unix epoch by the creating process's clock, the rest
// random. lock-reaper reads a row's creation time from it.
func NewUUID7(t time.Time) string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails since Go 1.24.
	ms := uint64(t.UnixMilli())
	for i := range 6 {
		b[i] = byte(ms >> (8 * (5 - i)))
	}
	s := formatUUID(b)
	return s[:14] + "7" + s[15:] // formatUUID wrote version 4
}

// seededUUID draws a version 4 UUID from r, so seeded runs name their
// resources the same way every time.
func seededUUID(r *mrand.Rand) string {
	var b [16]byte
	for i := 0; i < 16; i += 8 {
		v := r.Uint64()
		for j := range 8 {
			b[i+j] = byte(v >> (8 * j))
		}
	}
	return formatUUID(b)
}

func formatUUID(b [16]byte) string {
	b[6] = b[6]&0x0f | 0x40 // version 4
	b[8] = b[8]&0x3f | 0x80 // RFC 4122 variant
	var s [36]byte
	hex.Encode(s[0:8], b[0:4])
	s[8] = '-'
	hex.Encode(s[9:13], b[4:6])
	s[13] = '-'
	hex.Encode(s[14:18], b[6:8])
	s[18] = '-'
	hex.Encode(s[19:23], b[8:10])
	s[23] = '-'
	hex.Encode(s[24:36], b[10:16])
	return string(s[:])
}

// isUUID reports whether s is a UUID in canonical lowercase text form. It is
// judge.IsTaskUUID's twin, kept apart on purpose: sim plays Pulp and imports
// none of lock-reaper's packages (doc.go).
func isUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
				return false
			}
		}
	}
	return true
}

// pgUUID converts a UUID string for PostgreSQL's binary COPY protocol, which,
// unlike ordinary query parameters, cannot send a uuid as text.
func pgUUID(s string) (pgtype.UUID, error) {
	var u pgtype.UUID
	if s == "" {
		return u, nil // NULL
	}
	if err := u.Scan(s); err != nil {
		return u, fmt.Errorf("parse uuid %q: %w", s, err)
	}
	return u, nil
}
