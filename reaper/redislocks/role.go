package redislocks

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// NotPrimaryError says the Redis a pass would write to is no primary: a
// replica (writable or not) or a Sentinel. A replica with replica-read-only
// off takes the releases, while the primary Pulp uses keeps every lock and
// no cancel signal reaches a worker; a read-only one refuses the first write
// halfway through a pass. Either way the pass must not begin.
type NotPrimaryError struct {
	// Role is ROLE's first word: slave (a replica) or sentinel.
	Role string
	// Primary is the replica's primary, host:port, when ROLE names it.
	Primary string
}

func (e *NotPrimaryError) Error() string {
	switch {
	case e.Role == "sentinel":
		return "redis.url names a Sentinel, not Pulp's Redis: nothing is written. Use redis+sentinel://host:26379/0?master_name=NAME so that the reaper asks Sentinel for the primary"
	case e.Primary != "":
		return fmt.Sprintf("Redis is a replica of %s (ROLE), not the primary Pulp writes its locks to: nothing is written. Point redis.url at the primary %s, or at Sentinel with redis+sentinel://, the same Redis Pulp's API and workers use", e.Primary, e.Primary)
	}
	return fmt.Sprintf("Redis is no primary (ROLE says %s): nothing is written. Point redis.url at the primary Pulp's API and workers use", e.Role)
}

// CheckPrimary asks the server whether it is a primary (ROLE; INFO
// replication where the user may not run ROLE) and returns a
// *NotPrimaryError when it is not. It is asked before a pass's first write,
// as the database is asked whether it takes writes.
func CheckPrimary(ctx context.Context, rdb redis.UniversalClient, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	role, err := rdb.Do(ctx, "ROLE").Slice()
	if err == nil {
		return roleError(role)
	}
	if !isNoPerm(err) {
		return fmt.Errorf("ask whether Redis is the primary (ROLE): %w", err)
	}
	info, infoErr := rdb.Info(ctx, "replication").Result()
	if infoErr != nil {
		return fmt.Errorf("ask whether Redis is the primary: ROLE and INFO replication refused (%w); allow +role to the reaper's Redis user (internal/privilege/redis.acl)", errors.Join(err, infoErr))
	}
	return infoRoleError(info)
}

// roleError reads ROLE's reply: master, or slave with its primary's host and
// port, or sentinel.
func roleError(role []any) error {
	if len(role) == 0 {
		return &NotPrimaryError{Role: "nothing"}
	}
	kind := fmt.Sprint(role[0])
	switch kind {
	case "master":
		return nil
	case "slave":
		e := &NotPrimaryError{Role: kind}
		if len(role) > 2 {
			e.Primary = fmt.Sprintf("%v:%v", role[1], role[2])
		}
		return e
	}
	return &NotPrimaryError{Role: kind}
}

// infoRoleError reads INFO replication's role, master_host and master_port.
func infoRoleError(info string) error {
	fields := map[string]string{}
	for _, line := range strings.Split(info, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			fields[k] = v
		}
	}
	switch role := fields["role"]; role {
	case "master":
		return nil
	case "slave":
		e := &NotPrimaryError{Role: role}
		if h, p := fields["master_host"], fields["master_port"]; h != "" {
			e.Primary = h + ":" + p
		}
		return e
	case "":
		return &NotPrimaryError{Role: "unknown (INFO replication gave no role)"}
	default:
		return &NotPrimaryError{Role: role}
	}
}
