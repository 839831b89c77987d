package redislocks

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/lock-reaper/lock-reaper/reaper/judge"
)

// readBatch reads the value of each key in one round trip: a string lock
// answers with its owner; a key released since it was listed, or holding
// something else (a shared lock's set, or no lock at all), with nil. Only
// those get their type and members read, in a second round trip.
//
// The values come from one MGET per batch rather than a GET per key: a
// fleet's locks are nearly all strings, and one command a batch spares the
// reaper building and decoding a command for each key (Redis's own work
// hardly changes: the SCAN is most of it). A user whose ACL predates +mget
// is read with pipelined GETs instead (the pass warns once).
//
// Only values no longer than an owner name are fetched (sizes.go).
func (rr *Reader) readBatch(ctx context.Context, keys []string, reg *ownerRegistry, snap *Snapshot) error {
	sizes, err := rr.sizes(ctx, keys)
	if err != nil {
		return err
	}
	var others []string
	short := keys[:0:0]
	for i, k := range keys {
		switch n := sizes[i]; {
		case n == notString:
			others = append(others, k)
		case n > MaxOwnerLen:
			snap.ignore(k, "string", tooLongReason(n))
		default:
			short = append(short, k)
		}
	}
	cctx, cancel := context.WithTimeout(ctx, rr.Timeout)
	defer cancel()
	values, err := rr.values(cctx, short)
	if err != nil {
		return err
	}
	for i, k := range short {
		if values[i] == nil {
			others = append(others, k)
			continue
		}
		snap.addString(k, reg.intern(*values[i]), reg)
	}
	return rr.readOthers(ctx, others, reg, snap)
}

// values reads each key's string value, nil where it holds none.
func (rr *Reader) values(ctx context.Context, keys []string) ([]*string, error) {
	out := make([]*string, len(keys))
	if len(keys) == 0 {
		return out, nil
	}
	if !rr.noMGET {
		vals, err := rr.RDB.MGet(ctx, keys...).Result()
		switch {
		case err == nil:
			strs := make([]string, len(vals))
			for i, v := range vals {
				if s, ok := v.(string); ok {
					strs[i] = s
					out[i] = &strs[i]
				}
			}
			return out, nil
		case !isNoPerm(err):
			return nil, fmt.Errorf("read lock keys: %w", err)
		}
		rr.noMGET = true
		if rr.Log != nil {
			rr.Log.Warn("the Redis user may not run MGET: lock values are read one GET each, which costs Redis about twice the work; add +mget to its ACL (docs/security.md, The Redis ACL user)",
				slog.String("error", err.Error()))
		}
	}
	pipe := rr.RDB.Pipeline()
	cmds := make([]*redis.StringCmd, len(keys))
	for i, k := range keys {
		cmds[i] = pipe.Get(ctx, k)
	}
	if _, err := pipe.Exec(ctx); err != nil && !isWrongType(err) && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("read lock keys: %w", err)
	}
	for i, k := range keys {
		v, err := cmds[i].Result()
		switch {
		case err == nil:
			out[i] = &v
		case errors.Is(err, redis.Nil), isWrongType(err):
			// Released since it was listed, or no string: looked at again.
		default:
			return nil, fmt.Errorf("read %q: %w", k, err)
		}
	}
	return out, nil
}

// isNoPerm says Redis refused a command the user's ACL does not allow.
func isNoPerm(err error) bool {
	return err != nil && strings.HasPrefix(err.Error(), "NOPERM")
}

// readOthers reads the type of each key that holds no string, with the
// members of the sets among them. First the types, and the sets' sizes
// (shapes), which size the pages. Then the members, a page per call, as the
// registries are: the first page of every set in one pipeline, and only a
// set larger than a page costs more round trips, so that no call blocks
// Redis long however many members a shared lock has. A member too long to
// be an owner name is counted on the server and reported, never read
// (set_members.go).
func (rr *Reader) readOthers(ctx context.Context, keys []string, reg *ownerRegistry, snap *Snapshot) error {
	if len(keys) == 0 {
		return nil
	}
	shapes, err := rr.shapes(ctx, keys)
	if err != nil {
		return fmt.Errorf("read shared locks: %w", err)
	}
	var sets []string
	var setShapes []keyShape
	for i, k := range keys {
		switch typ := shapes[i].typ; typ {
		case "none", "string":
			// Changed since its value was read; the next pass sees what it
			// became.
		case "set":
			if _, ok := ParseResourceKey(k); !ok {
				snap.ignore(k, typ, "task lock is a set; a task lock is a string")
			} else {
				sets, setShapes = append(sets, k), append(setShapes, shapes[i])
			}
		default:
			snap.ignore(k, typ, "lock key of type "+typ+"; Pulp writes strings and sets")
		}
	}
	if len(sets) == 0 {
		return nil
	}
	if !rr.noMemberScript {
		if done, err := rr.readSetsByScript(ctx, sets, setShapes, reg, snap); done || err != nil {
			return err
		}
	}
	// The user may not run the member script: a set whose members are too
	// long to be owner names is reported whole, the others read with SSCAN.
	readable := sets[:0:0]
	for i, k := range sets {
		if reason := setShapes[i].tooLongMembers(); reason != "" {
			snap.ignore(k, "set", reason)
		} else {
			readable = append(readable, k)
		}
	}
	return rr.readMembers(ctx, readable, reg, snap)
}

// readMembers reads the members of sets with SSCAN, for a user that may not
// run the member script (readOthers). SSCAN of a key
// that is no set any more answers WRONGTYPE: the next pass sees what it
// became.
func (rr *Reader) readMembers(ctx context.Context, sets []string, reg *ownerRegistry, snap *Snapshot) error {
	if len(sets) == 0 {
		return nil
	}
	cctx, cancel := context.WithTimeout(ctx, rr.Timeout)
	defer cancel()
	pipe := rr.RDB.Pipeline()
	members := make([]*redis.ScanCmd, len(sets))
	for i, k := range sets {
		members[i] = pipe.SScan(cctx, k, 0, "", registryPageSize)
	}
	if _, err := pipe.Exec(cctx); err != nil && !isWrongType(err) {
		return fmt.Errorf("read shared locks: %w", err)
	}
	for i, k := range sets {
		page, cursor, err := members[i].Result()
		if err == nil {
			page, err = rr.readRest(ctx, k, page, cursor)
		}
		if isWrongType(err) {
			continue
		}
		if err != nil {
			return fmt.Errorf("read members of %q: %w", k, err)
		}
		snap.addMembers(k, page, reg)
	}
	return nil
}

func (s *Snapshot) addMembers(key string, members []string, reg *ownerRegistry) {
	sort.Strings(members)
	for _, m := range members {
		if problem := OwnerProblem(m); problem != "" {
			s.ignore(key, "set", "member "+quoteShort(m)+": "+problem)
			continue
		}
		m = reg.intern(m)
		s.Holdings = append(s.Holdings, judge.Holding{Key: key, Kind: judge.KindShared, Owner: m, Registered: reg.registered(key, m)})
	}
}

func (s *Snapshot) addString(key, value string, reg *ownerRegistry) {
	if problem := OwnerProblem(value); problem != "" {
		s.ignore(key, "string", "value "+quoteShort(value)+": "+problem)
		return
	}
	if _, ok := ParseTaskKey(key); ok {
		s.Holdings = append(s.Holdings, judge.Holding{Key: key, Kind: judge.KindTask, Owner: value, Registered: reg.registered(key, value)})
		return
	}
	if strings.HasPrefix(key, judge.TaskKeyPrefix) {
		s.ignore(key, "string", "task key without a canonical lowercase task UUID")
		return
	}
	if _, ok := ParseResourceKey(key); ok {
		s.Holdings = append(s.Holdings, judge.Holding{Key: key, Kind: judge.KindExclusive, Owner: value, Registered: reg.registered(key, value)})
		return
	}
	s.ignore(key, "string", "resource lock key without a resource name")
}

func (s *Snapshot) ignore(key, typ, reason string) {
	s.Ignored = append(s.Ignored, Ignored{Key: key, Type: typ, Reason: reason})
}

// quoteShort quotes a value for a report, cut to a readable length.
func quoteShort(v string) string {
	const max = 64
	if len(v) > max {
		return fmt.Sprintf("%q… (%d bytes)", v[:max], len(v))
	}
	return fmt.Sprintf("%q", v)
}

func isWrongType(err error) bool {
	return err != nil && strings.HasPrefix(err.Error(), "WRONGTYPE")
}
