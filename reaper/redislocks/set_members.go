package redislocks

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/lock-reaper/lock-reaper/reaper/judge"
)

// A shared lock's members are owner names, never longer than MaxOwnerLen,
// but anyone may add a member of any length to its set, and SSCAN answers a
// small set whole whatever its COUNT. A set is so read through a script
// (memberPageScript) that walks one SSCAN page of it on the server and
// returns the members no longer than an owner name, and of the longer ones
// only how many there were and the longest's length: a huge member is never
// sent, and the set's real members are judged as any other. One call walks
// one page, of the COUNT memberPageCount gives: a page of short members
// costs Redis about a millisecond, and a set whose memory (MEMORY USAGE,
// read with its type) says its members are long is walked in pages of
// fewer, so that one call copies a bounded number of bytes into the
// script's memory.
//
// A user that may not run the script (an ACL without +eval or +evalsha, or
// without +sscan or +type in scripts) reads sets with SSCAN as before: a
// set whose members average more than maxMemberAverage is then reported as
// ignored unread, whole (set_sizes.go). The pass warns once.

// memberPageScript walks one SSCAN page of a shared lock's set.
//
// KEYS[1]: the set. ARGV: the cursor, the COUNT, the longest member
// returned. It returns the next cursor ("0" at the end), the members no
// longer than ARGV[3], how many were longer and the longest of those's
// length. A key that is no set (gone, or changed since its type was read)
// answers cursor "0", no members and -1.
var memberPageScript = redis.NewScript(aclCheckLua(
	[]string{"'TYPE'", "(KEYS[1] or " + luaString(judge.ResourceKeyPrefix+"x") + ")"},
	[]string{"'SSCAN'", "(KEYS[1] or " + luaString(judge.ResourceKeyPrefix+"x") + ")", "'0'"},
) + `
if redis.call('TYPE', KEYS[1])['ok'] ~= 'set' then return {'0', {}, -1, 0} end
local page = redis.call('SSCAN', KEYS[1], ARGV[1], 'COUNT', tonumber(ARGV[2]))
local most = tonumber(ARGV[3])
local short, long, longest = {}, 0, 0
for _, m in ipairs(page[2]) do
  local n = #m
  if n <= most then
    short[#short + 1] = m
  else
    long = long + 1
    if n > longest then longest = n end
  end
end
return {page[1], short, long, longest}
`)

// memberPageBytes bounds, from a set's average member size, the bytes of
// members one call of memberPageScript copies: Redis takes far longer to
// hand a long member to a script than to walk a short one
// (docs/safety.md has the figures).
const memberPageBytes = 64 << 10

// memberPageCount is the COUNT of each call of memberPageScript on a set of
// this shape: a page of registryPageSize, or fewer when the set's memory
// says its members are long (at least one).
func (s keyShape) memberPageCount() int64 {
	if s.members <= 0 || s.bytes/s.members <= maxMemberAverage {
		return registryPageSize
	}
	return max(1, min(registryPageSize, memberPageBytes/(s.bytes/s.members)))
}

// setMembers is what the member script read of one set: its short members,
// each once, and how many members were too long, with the longest's length.
type setMembers struct {
	members       []string
	long, longest int64
	gone          bool
}

// memberPage is one reply of memberPageScript.
type memberPage struct {
	cursor        string
	members       []string
	long, longest int64
	gone          bool
}

// parseMemberPage reads a reply of memberPageScript.
func parseMemberPage(raw any) (memberPage, error) {
	r, ok := raw.([]any)
	if !ok || len(r) != 4 {
		return memberPage{}, fmt.Errorf("unexpected reply %v", raw)
	}
	var p memberPage
	p.cursor, _ = r[0].(string)
	list, _ := r[1].([]any)
	p.members = make([]string, 0, len(list))
	for _, m := range list {
		s, _ := m.(string)
		p.members = append(p.members, s)
	}
	p.long, _ = r[2].(int64)
	p.longest, _ = r[3].(int64)
	if p.long < 0 {
		p.long, p.gone = 0, true
	}
	return p, nil
}

// readSetsByScript reads the sets with memberPageScript: the first page of
// every set in one pipeline, then the rest of each set larger than a page a
// call at a time. It returns false when the user may not run the script;
// nothing was then added to snap.
func (rr *Reader) readSetsByScript(ctx context.Context, sets []string, shapes []keyShape, reg *ownerRegistry, snap *Snapshot) (bool, error) {
	cctx, cancel := context.WithTimeout(ctx, rr.Timeout)
	defer cancel()
	// The first set's call loads the script (EVAL when Redis lacks it), so
	// that the others go by its hash.
	first, err := memberPageScript.Run(cctx, rr.RDB, []string{sets[0]}, "0", shapes[0].memberPageCount(), MaxOwnerLen).Result()
	if isScriptRefused(err) {
		rr.noMemberScript = true
		if rr.Log != nil {
			rr.Log.Warn("the Redis user may not run the script that reads shared locks' members (EVALSHA, EVAL, and TYPE and SSCAN in it): a set with a member longer than an owner name is reported as ignored whole, and its real members are not judged; allow them in its ACL (docs/security.md, The Redis ACL user)",
				slog.String("error", err.Error()))
		}
		return false, nil
	}
	if err != nil {
		return true, fmt.Errorf("read members of %q: %w", sets[0], err)
	}
	replies := make([]*redis.Cmd, len(sets))
	if len(sets) > 1 {
		pipe := rr.RDB.Pipeline()
		for i := 1; i < len(sets); i++ {
			replies[i] = pipe.EvalSha(cctx, memberPageScript.Hash(), []string{sets[i]}, "0", shapes[i].memberPageCount(), MaxOwnerLen)
		}
		// Each reply's own error is looked at below.
		_, _ = pipe.Exec(cctx)
	}
	for i, k := range sets {
		raw := first
		if i > 0 {
			raw, err = replies[i].Result()
			if redis.HasErrorPrefix(err, "NOSCRIPT") {
				// The script cache was flushed meanwhile: loaded again.
				raw, err = rr.memberPage(ctx, k, "0", shapes[i].memberPageCount())
			}
			if err != nil {
				return true, fmt.Errorf("read members of %q: %w", k, err)
			}
		}
		page, err := parseMemberPage(raw)
		if err != nil {
			return true, fmt.Errorf("read members of %q: %w", k, err)
		}
		read, err := rr.memberRest(ctx, k, page, shapes[i].memberPageCount())
		if err != nil {
			return true, fmt.Errorf("read members of %q: %w", k, err)
		}
		if read.gone {
			continue
		}
		if read.long > 0 {
			snap.ignore(k, "set", longMembersReason(read.long, read.longest))
		}
		snap.addMembers(k, read.members, reg)
	}
	return true, nil
}

// memberPage runs memberPageScript once.
func (rr *Reader) memberPage(ctx context.Context, key, cursor string, count int64) (any, error) {
	cctx, cancel := context.WithTimeout(ctx, rr.Timeout)
	defer cancel()
	return memberPageScript.Run(cctx, rr.RDB, []string{key}, cursor, count, MaxOwnerLen).Result()
}

// memberRest reads the rest of a set whose first page was page, a call per
// page, each member once (SSCAN may return one twice; a long one is then
// counted twice, which only the report's count shows).
func (rr *Reader) memberRest(ctx context.Context, key string, page memberPage, count int64) (setMembers, error) {
	out := setMembers{members: page.members, long: page.long, longest: page.longest, gone: page.gone}
	if page.cursor == "0" || page.cursor == "" || page.gone {
		// One page, as SSCAN answers a small set: no duplicates.
		return out, nil
	}
	seen := make(map[string]bool, 2*len(page.members))
	for _, m := range page.members {
		seen[m] = true
	}
	for page.cursor != "0" && page.cursor != "" {
		raw, err := rr.memberPage(ctx, key, page.cursor, count)
		if err != nil {
			return setMembers{}, err
		}
		if page, err = parseMemberPage(raw); err != nil {
			return setMembers{}, err
		}
		if page.gone {
			// Emptied and gone meanwhile: the members read stand for what
			// the set held, as a release finds them gone.
			return out, nil
		}
		for _, m := range page.members {
			if !seen[m] {
				seen[m] = true
				out.members = append(out.members, m)
			}
		}
		out.long += page.long
		out.longest = max(out.longest, page.longest)
	}
	return out, nil
}

// isScriptRefused says Redis refused the member script, or a command in
// it, to this user: NOPERM from EVAL or EVALSHA, or from the script's own
// check (Redis 7.0 and later), or Redis 6.2's refusal of a command inside a
// script.
func isScriptRefused(err error) bool {
	return isNoPerm(err) || err != nil && strings.Contains(err.Error(), "can't run this command")
}

// longMembersReason is why the long members of a set were not read.
func longMembersReason(n, longest int64) string {
	if n == 1 {
		return fmt.Sprintf("member of %d bytes, not read: an owner name is at most %d bytes", longest, MaxOwnerLen)
	}
	return fmt.Sprintf("%d members of up to %d bytes, not read: an owner name is at most %d bytes", n, longest, MaxOwnerLen)
}
