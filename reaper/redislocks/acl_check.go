package redislocks

import "strings"

// aclCheckLua is the opening of every script that writes: before its first
// write it asks Redis (redis.acl_check_cmd, Redis 7.0 and later) whether
// the user may run each command the script may call, on keys of the kinds
// it touches, and fails naming the first one refused. A command refused
// halfway through a script does not undo the writes before it: a release
// without DEL removed memberships and then failed. Checked first, a refusal
// leaves everything as it was, and the error says which command to allow.
// On Redis 6.2 (no acl_check_cmd) the script runs unchecked.
func aclCheckLua(checks ...[]string) string {
	var b strings.Builder
	b.WriteString("if redis.acl_check_cmd then\n  for _, c in ipairs({")
	for i, c := range checks {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("{")
		for j, arg := range c {
			if j > 0 {
				b.WriteString(", ")
			}
			b.WriteString(arg)
		}
		b.WriteString("}")
	}
	b.WriteString(`}) do
    if not redis.acl_check_cmd(unpack(c)) then
      return redis.error_reply('NOPERM the Redis user may not run ' .. c[1] .. ' on ' .. tostring(c[2]) ..
        ': nothing was changed. Allow it in the user\'s ACL (internal/privilege/redis.acl; lock-reaper doctor checks them all)')
    end
  end
end
`)
	return b.String()
}

// luaString quotes s as a Lua string literal: the key names checked are
// constants of this package, without quotes or backslashes.
func luaString(s string) string { return "'" + s + "'" }
