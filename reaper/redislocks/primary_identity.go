package redislocks

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// SignalsCheckedKey is lock-reaper's own hash saying on which primary the
// cancel signals of the tasks it finished were last all checked (and, while
// a check goes on over several passes, how far it got): SignalsChecked.
const SignalsCheckedKey = "pulp:lock_reaper:signals_checked"

// signalsCheckedTTL lets the record go once no reaper refreshes it; every
// pass that writes refreshes it.
const signalsCheckedTTL = 30 * 24 * time.Hour

// Primary is which Redis process, in which term as primary, a pass talks
// to. A Sentinel failover promotes another process (another run_id); a
// process promoted again, or restarted, starts a new replication history
// (another master_replid). Writes a primary took and had not yet passed to
// its replica are lost when another one takes over, and the two fields
// change with every such change.
type Primary struct {
	RunID string
	// ReplID is INFO replication's master_replid.
	ReplID string
}

// String is the form SignalsChecked stores and reports show.
func (p Primary) String() string { return "run_id " + p.RunID + ", replication id " + p.ReplID }

// SignalsChecked is the record under SignalsCheckedKey. Each field names a
// Primary by its String, so that a record written to one primary and
// copied to another (by replication, before a failover) never matches the
// other one.
type SignalsChecked struct {
	// Primary is the primary on which every cancel signal the reaper
	// published in the signal's lifetime was last checked present, or
	// published again.
	Primary string
	// Checking is the primary whose check goes on, after After (a cursor of
	// pulpdb.ReadFinishedByReaper), when a pass checked only part of them.
	Checking, After string
}

// ReadPrimary reads the identity of the primary the client talks to and
// the record of cancel signals checked, in one round trip on one
// connection (so from one server), and refreshes the record's expiry.
func ReadPrimary(ctx context.Context, rdb redis.UniversalClient, timeout time.Duration) (Primary, SignalsChecked, error) {
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var server, repl *redis.StringCmd
	var record *redis.MapStringStringCmd
	_, err := rdb.Pipelined(cctx, func(p redis.Pipeliner) error {
		server, repl = p.Info(cctx, "server"), p.Info(cctx, "replication")
		record = p.HGetAll(cctx, SignalsCheckedKey)
		p.Expire(cctx, SignalsCheckedKey, signalsCheckedTTL)
		return nil
	})
	if err != nil {
		return Primary{}, SignalsChecked{}, fmt.Errorf("read which Redis primary this is (INFO server, INFO replication) and where the cancel signals were last checked (%s): %w", SignalsCheckedKey, err)
	}
	p, err := primaryOf(server.Val(), repl.Val())
	if err != nil {
		return Primary{}, SignalsChecked{}, err
	}
	h := record.Val()
	return p, SignalsChecked{Primary: h["primary"], Checking: h["checking"], After: h["after"]}, nil
}

// ReadPrimaryIdentity reads the identity of the primary the client talks to
// now, in one round trip.
func ReadPrimaryIdentity(ctx context.Context, rdb redis.UniversalClient, timeout time.Duration) (Primary, error) {
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var server, repl *redis.StringCmd
	_, err := rdb.Pipelined(cctx, func(p redis.Pipeliner) error {
		server, repl = p.Info(cctx, "server"), p.Info(cctx, "replication")
		return nil
	})
	if err != nil {
		return Primary{}, fmt.Errorf("read which Redis primary this is (INFO server, INFO replication): %w", err)
	}
	return primaryOf(server.Val(), repl.Val())
}

// WriteSignalsChecked stores the record of cancel signals checked.
func WriteSignalsChecked(ctx context.Context, rdb redis.UniversalClient, timeout time.Duration, c SignalsChecked) error {
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmds, err := rdb.TxPipelined(cctx, func(p redis.Pipeliner) error {
		p.HSet(cctx, SignalsCheckedKey, "primary", c.Primary, "checking", c.Checking, "after", c.After)
		p.Expire(cctx, SignalsCheckedKey, signalsCheckedTTL)
		return nil
	})
	if err := refusedIn(cmds, err); err != nil {
		return fmt.Errorf("record where the cancel signals were checked (%s): %w", SignalsCheckedKey, err)
	}
	return nil
}

// errNoIdentity says INFO named neither a run_id nor a replication id: a
// proxy in front of Redis, or a server that hides them.
var errNoIdentity = errors.New("INFO gave no run_id or master_replid (a proxy in front of Redis?): a failover cannot be noticed")

// primaryOf reads run_id from INFO server and master_replid from INFO
// replication.
func primaryOf(server, repl string) (Primary, error) {
	p := Primary{RunID: infoField(server, "run_id"), ReplID: infoField(repl, "master_replid")}
	if p.RunID == "" || p.ReplID == "" {
		return Primary{}, errNoIdentity
	}
	return p, nil
}

// infoField is the value of name in an INFO reply, or "".
func infoField(info, name string) string {
	for _, line := range strings.Split(info, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok && k == name {
			return v
		}
	}
	return ""
}
