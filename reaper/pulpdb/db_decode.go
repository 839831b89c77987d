package pulpdb

import (
	"encoding/hex"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/lock-reaper/lock-reaper/reaper/judge"
)

// interner keeps one copy of each distinct string read through it: of
// text, and of the claims' uuids (one per worker row). Strings in known are
// shared as they are, but what is not found there is not added: those are
// mostly one row's own.
type interner struct {
	text   map[string]string
	claims map[[16]byte]string
	known  map[string]string
}

func (in interner) get(b []byte) string {
	if s, ok := in.text[string(b)]; ok {
		return s
	}
	s := string(b)
	in.text[s] = s
	return s
}

// uuidText scans a uuid column, which PostgreSQL sends as 16 bytes, into its
// canonical text (what uuid::text prints); NULL is "". With seen, each
// distinct uuid is formatted once; a uuid named in named is its task's ID.
type uuidText struct {
	dst   *string
	seen  map[[16]byte]string
	named map[string]judge.Task
}

func (u uuidText) ScanUUID(v pgtype.UUID) error {
	switch {
	case !v.Valid:
		*u.dst = ""
	case u.seen == nil:
		var buf [36]byte
		text := appendUUID(buf[:0], v.Bytes)
		if t, ok := u.named[string(text)]; ok {
			*u.dst = t.ID
		} else {
			*u.dst = string(text)
		}
	default:
		s, ok := u.seen[v.Bytes]
		if !ok {
			s = formatUUID(v.Bytes)
			u.seen[v.Bytes] = s
		}
		*u.dst = s
	}
	return nil
}

// formatUUID writes a uuid in the canonical lowercase text form.
func formatUUID(b [16]byte) string {
	var buf [36]byte
	return string(appendUUID(buf[:0], b))
}

// appendUUID appends the canonical text of a uuid to buf, which has room.
func appendUUID(dst []byte, b [16]byte) []byte {
	buf := dst[len(dst) : len(dst)+36]
	hex.Encode(buf[0:8], b[0:4])
	buf[8] = '-'
	hex.Encode(buf[9:13], b[4:6])
	buf[13] = '-'
	hex.Encode(buf[14:18], b[6:8])
	buf[18] = '-'
	hex.Encode(buf[19:23], b[8:10])
	buf[23] = '-'
	hex.Encode(buf[24:36], b[10:16])
	return dst[:len(dst)+36]
}

// internedText scans a text column into an interned string; NULL is "".
type internedText struct {
	dst *string
	in  interner
}

// ScanBytes receives the value in the driver's memory, valid only until the
// next row.
func (t internedText) ScanBytes(b []byte) error {
	*t.dst = t.in.get(b)
	return nil
}

// reservedScanner scans reserved_resources_record. Shared resources (a
// domain most tasks reserve) are interned; exclusive ones are mostly one
// task's own, and share the string of the lock that holds them if any.
type reservedScanner struct {
	out *[]string
	// elem scans each element in turn: pgx scans an array's elements one
	// after the other, and one scanner for all spares an allocation each.
	elem reservedElem
}

func (r *reservedScanner) SetDimensions(dims []pgtype.ArrayDimension) error {
	if dims == nil {
		*r.out = nil
		return nil
	}
	// An empty array has no dimensions and no elements.
	n := 0
	for i, d := range dims {
		if i == 0 {
			n = 1
		}
		n *= int(d.Length)
	}
	*r.out = make([]string, n)
	return nil
}

func (r *reservedScanner) ScanIndex(i int) any {
	r.elem.dst = &(*r.out)[i]
	return &r.elem
}

func (r *reservedScanner) ScanIndexType() any { return &reservedElem{} }

type reservedElem struct {
	dst *string
	in  interner
}

func (e *reservedElem) ScanBytes(b []byte) error {
	if judge.IsShared(b) {
		*e.dst = e.in.get(b)
	} else if s, ok := e.in.known[string(b)]; ok {
		*e.dst = s
	} else {
		*e.dst = string(b)
	}
	return nil
}
