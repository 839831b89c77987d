package doctor

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/lock-reaper/lock-reaper/internal/privilege"
)

// probe is one command, with arguments on keys under the lock prefixes that
// no one uses, that the ACL check asks about.
type probe struct {
	name string
	args []any
	// destructive probes are only ever asked about with ACL DRYRUN, which
	// runs nothing, never queued in the transaction probe.
	destructive bool
}

const probeKey = "pulp:lock_reaper:doctor-probe"

// probeArgs are the arguments the check asks about each command of the ACL
// list with: keys under the lock names nobody uses, so that a command that
// did run (it never does) would change nothing that matters. Every command
// of internal/privilege/redis.acl needs an entry (TestEveryACLCommandHasProbeArgs).
var probeArgs = map[string][]any{
	"select":       {"select", "0"},
	"scan":         {"scan", "0", "count", "1"},
	"type":         {"type", probeKey},
	"strlen":       {"strlen", "task:" + probeKey},
	"memory|usage": {"memory", "usage", "pulp:resource_lock:" + probeKey},
	"get":          {"get", "task:" + probeKey},
	"mget":         {"mget", "task:" + probeKey},
	"hgetall":      {"hgetall", probeKey},
	"evalsha":      {"evalsha", strings.Repeat("0", 40), "1", "task:" + probeKey},
	"eval":         {"eval", "return 0", "1", "task:" + probeKey},
	"del":          {"del", "task:" + probeKey},
	"srem":         {"srem", "pulp:resource_lock:" + probeKey, "x"},
	"sismember":    {"sismember", "pulp:owner_locks:" + probeKey, "x"},
	"exists":       {"exists", "task:" + probeKey},
	"smismember":   {"smismember", "pulp:owner_locks:" + probeKey, "x"},
	"scard":        {"scard", "pulp:owner_locks:" + probeKey},
	"sintercard":   {"sintercard", "2", "pulp:owner_locks:" + probeKey, probeKey},
	"sadd":         {"sadd", probeKey, "x"},
	"sscan":        {"sscan", "pulp:owner_locks:" + probeKey, "0"},
	"multi":        {"multi"},
	"exec":         {"exec"},
	"hset":         {"hset", probeKey, "f", "v"},
	"expire":       {"expire", probeKey, "1"},
	"lpush":        {"lpush", probeKey, "x"},
	"ltrim":        {"ltrim", probeKey, "0", "1"},
	"lrange":       {"lrange", probeKey, "0", "1"},
	"setex":        {"setex", "pulp:task:cancel:" + probeKey, "1", "x"},
	"info":         {"info", "server"},
	"role":         {"role"},
}

// allowedProbe is how the check asks about a command of the ACL list. A
// command without probe arguments is asked about bare; Redis then answers
// with an arity error, which the check reports as "no answer".
func allowedProbe(cmd string) probe {
	if args, ok := probeArgs[cmd]; ok {
		return probe{name: cmd, args: args}
	}
	return probe{name: cmd, args: []any{cmd}}
}

// deniedProbes are commands and keys a pass never needs; the documented
// ACL refuses them. They stand for the classes an over-broad ACL opens:
// writes the reaper never makes, keyspace-wide commands, administration,
// and keys outside Pulp's lock names.
var deniedProbes = []probe{
	{name: "set (a lock key)", args: []any{"set", "task:" + probeKey, "x"}, destructive: true},
	{name: "flushdb", args: []any{"flushdb"}, destructive: true},
	{name: "keys", args: []any{"keys", probeKey}},
	{name: "config|get", args: []any{"config", "get", "maxmemory"}},
	{name: "dbsize", args: []any{"dbsize"}},
	{name: "get (a key outside the lock names)", args: []any{"get", "PULP_CACHE"}},
}

// aclCommands lists the commands the documented ACL allows, in its order.
func aclCommands() []string {
	var out []string
	for _, r := range privilege.RedisRules() {
		if cmd, ok := strings.CutPrefix(r, "+"); ok && !strings.HasPrefix(cmd, "@") {
			out = append(out, cmd)
		}
	}
	return out
}

// aclAnswers is what Redis said about each probe: allowed or not, by name;
// unclear holds probes it gave no yes-or-no answer for.
type aclAnswers struct {
	method  string
	user    string
	allowed map[string]bool
	unclear []string
	// withoutIntercard: the server predates SINTERCARD, which the ACL then
	// leaves out.
	withoutIntercard bool
}

func checkRedisACL(ctx context.Context, t Target) Result {
	user := redisUser(t.Redis)
	answers, dryErr := dryRunACL(ctx, t.Redis, user)
	if dryErr != nil {
		var err error
		if answers, err = transactionProbeACL(ctx, t.Redis, user); err != nil {
			return couldNotCheck("check the ACL (ACL DRYRUN: "+dryErr.Error()+"; transaction probe)", err,
				"run lock-reaper doctor once with an admin connection to check the ACL with ACL DRYRUN.")
		}
	}
	answers.withoutIntercard = !redisHasSintercard(ctx, t.Redis)
	return evalACL(answers)
}

// redisHasSintercard says the server has SINTERCARD (Redis 7.0 and later),
// which the release script counts a live owner's registry with. Redis 6.2
// has not, so its ACL leaves +sintercard out and the script walks instead. A
// version INFO does not tell counts as 7: the check is then as strict as
// internal/privilege/redis.acl.
func redisHasSintercard(ctx context.Context, rdb redis.UniversalClient) bool {
	server, err := readInfo(ctx, rdb, "server")
	if err != nil {
		return true
	}
	v := parseVersion(server["redis_version"])
	return v == nil || v.atLeast(version{7, 0})
}

// redisUser is the ACL user the client logs in as; "default" without one.
func redisUser(rdb redis.UniversalClient) string {
	if c, ok := rdb.(*redis.Client); ok && c.Options().Username != "" {
		return c.Options().Username
	}
	return "default"
}

// dryRunACL asks ACL DRYRUN (Redis 7) about every probe: it runs nothing.
// It needs a connection allowed to run ACL, which the reaper's own user is
// not; the error then says so and the transaction probe takes over.
func dryRunACL(ctx context.Context, rdb redis.UniversalClient, user string) (aclAnswers, error) {
	a := aclAnswers{method: "ACL DRYRUN", user: user, allowed: map[string]bool{}}
	ask := func(p probe) error {
		reply, err := rdb.Do(ctx, append([]any{"acl", "dryrun", user}, p.args...)...).Text()
		switch {
		case err != nil && len(a.allowed) == 0 && len(a.unclear) == 0:
			// The first answer decides whether DRYRUN can be used at all.
			return err
		case err != nil:
			a.unclear = append(a.unclear, p.name)
		default:
			a.allowed[p.name] = reply == "OK"
		}
		return nil
	}
	for _, cmd := range aclCommands() {
		if err := ask(allowedProbe(cmd)); err != nil {
			return a, err
		}
	}
	for _, p := range deniedProbes {
		if err := ask(p); err != nil {
			return a, err
		}
	}
	return a, nil
}

// abortCommand is the deliberately unknown command that makes EXEC discard the
// probe transaction.
const abortCommand = "lock-reaper-doctor-abort"

// transactionProbeACL is the fallback for a connection that may not run ACL
// DRYRUN (the reaper's own user) or a Redis before 7. On a connection of its
// own it opens MULTI and queues each probe: Redis checks the ACL when it
// queues a command, answering QUEUED or NOPERM, and runs nothing before
// EXEC. The last queued command is unknown, so EXEC aborts the transaction
// (EXECABORT) and nothing queued ever runs. Destructive probes are left out
// all the same, and nothing is queued unless MULTI was accepted.
func transactionProbeACL(ctx context.Context, rdb redis.UniversalClient, user string) (aclAnswers, error) {
	a := aclAnswers{method: "transaction probe (MULTI, queue, aborted EXEC)", user: user, allowed: map[string]bool{}}
	c, ok := rdb.(*redis.Client)
	if !ok {
		return a, errors.New("not a single-server client")
	}
	// A client of its own, closed afterwards, so that no pooled connection
	// is ever left inside a transaction.
	opts := *c.Options()
	opts.PoolSize, opts.MinIdleConns, opts.MaxIdleConns = 1, 0, 0
	own := redis.NewClient(&opts)
	defer own.Close()
	conn := own.Conn()
	defer conn.Close()

	if err := conn.Do(ctx, "multi").Err(); err != nil {
		if isNoPerm(err) {
			a.allowed["multi"] = false
			return a, nil
		}
		return a, fmt.Errorf("MULTI: %w", err)
	}
	a.allowed["multi"] = true
	var probes []probe
	for _, cmd := range aclCommands() {
		if cmd != "multi" && cmd != "exec" {
			probes = append(probes, allowedProbe(cmd))
		}
	}
	for _, p := range deniedProbes {
		if !p.destructive {
			probes = append(probes, p)
		}
	}
	cmds, _ := conn.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, pr := range probes {
			p.Do(ctx, pr.args...)
		}
		p.Do(ctx, abortCommand)
		p.Do(ctx, "exec")
		p.Do(ctx, "discard") // only matters when EXEC itself was refused
		return nil
	})
	if len(cmds) != len(probes)+3 {
		return a, fmt.Errorf("transaction probe: %d replies for %d commands", len(cmds), len(probes)+3)
	}
	for i, pr := range probes {
		err := cmds[i].Err()
		switch {
		case err == nil:
			a.allowed[pr.name] = true
		case isNoPerm(err):
			a.allowed[pr.name] = false
		default:
			a.unclear = append(a.unclear, pr.name)
		}
	}
	execErr := cmds[len(probes)+1].Err()
	switch {
	case isNoPerm(execErr):
		a.allowed["exec"] = false
	case execErr != nil && strings.HasPrefix(execErr.Error(), "EXECABORT"):
		a.allowed["exec"] = true
	default:
		return a, fmt.Errorf("transaction probe: EXEC did not abort (%v)", execErr)
	}
	return a, nil
}

// evalACL judges the answers: every command of the documented list must be
// allowed (a pass that is refused one stops halfway), and every denied probe
// refused (least privilege).
func evalACL(a aclAnswers) Result {
	var missing, extra []string
	for _, cmd := range aclCommands() {
		if cmd == "sintercard" && a.withoutIntercard {
			a.unclear = slices.DeleteFunc(a.unclear, func(c string) bool { return c == cmd })
			continue
		}
		if allowed, asked := a.allowed[cmd]; asked && !allowed {
			missing = append(missing, cmd)
		}
	}
	for _, p := range deniedProbes {
		if a.allowed[p.name] {
			extra = append(extra, p.name)
		}
	}
	sort.Strings(a.unclear)
	evidence := fmt.Sprintf("user %q, by %s", a.user, a.method)
	if len(a.unclear) > 0 {
		evidence += "; no answer for " + strings.Join(a.unclear, ", ")
	}
	switch {
	case len(missing) > 0:
		return Result{Status: Fail, Evidence: evidence + "; refused: " + strings.Join(missing, ", ") + " (a pass needs them)",
			Fix: "run the ACL SETUSER line of docs/security.md (internal/privilege/redis.acl) for the reaper's user."}
	case len(extra) > 0:
		return Result{Status: Warn, Evidence: evidence + "; also allowed: " + strings.Join(extra, ", ") + " (more than a pass needs)",
			Fix: "give the reaper an ACL user of its own with exactly the ACL SETUSER rules of docs/security.md."}
	case len(a.unclear) > 0:
		return Result{Status: Warn, Evidence: evidence, Fix: "check the ACL by hand with ACL DRYRUN."}
	}
	return Result{Status: OK, Evidence: evidence + ": every command a pass uses is allowed, and nothing the probes tried beyond"}
}
