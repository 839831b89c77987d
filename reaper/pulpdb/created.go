package pulpdb

import (
	"encoding/hex"
	"strings"
	"time"
)

// createdFromID reads the creation time a version 7 UUID carries: its first
// 48 bits are milliseconds since the Unix epoch. pulpcore names its rows with
// uuid7 (pulp_uuid in pulpcore/app/models/base.py), taken by the worker's
// clock when it creates the row, so a row's pulp_id says when it was created
// without reading pulp_created, which the reaper's least-privilege grant does
// not include. Rows of older pulpcore versions (version 4 UUIDs) give false:
// the rules that need the creation time then say nothing.
func createdFromID(id string) (time.Time, bool) {
	hexID := strings.ReplaceAll(id, "-", "")
	if len(hexID) != 32 || hexID[12] != '7' {
		return time.Time{}, false
	}
	b, err := hex.DecodeString(hexID[:12])
	if err != nil {
		return time.Time{}, false
	}
	var ms int64
	for _, c := range b {
		ms = ms<<8 | int64(c)
	}
	return time.UnixMilli(ms).UTC(), true
}
