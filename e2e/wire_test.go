package e2e

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/lock-reaper/lock-reaper/reaper"
	"github.com/lock-reaper/lock-reaper/reaper/redislocks"
)

// holdingRef names one holding: a lock key and one owner.
type holdingRef struct{ Key, Owner string }

func (h holdingRef) String() string { return h.Key + " held by " + h.Owner }

// wireLog is a go-redis hook on the reaper's own Redis client that records,
// from the replies Redis sent, every holding the reaper's release script
// removed. It is the accounting's independent witness: the reports are built
// by the reaper from the same replies, so a report that drops, doubles or
// invents a release disagrees with this log.
//
// It decodes the release script's calling convention (reaper/redislocks/release.go):
// KEYS are the lock keys, ARGV[1] is their number n, ARGV[2] their flags
// and ARGV[3..n+2] their owners; the reply is a string of one result code
// per key. Any call of the release script that does not fit is recorded as
// malformed and fails the test.
type wireLog struct {
	mu        sync.Mutex
	released  map[holdingRef]int
	results   map[string]int // by result, over every holding sent
	malformed []string
}

func newWireLog() *wireLog {
	return &wireLog{released: map[holdingRef]int{}, results: map[string]int{}}
}

var _ redis.Hook = (*wireLog)(nil)

func (w *wireLog) DialHook(next redis.DialHook) redis.DialHook { return next }

func (w *wireLog) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		w.observe(cmd, err)
		return err
	}
}

func (w *wireLog) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		for _, cmd := range cmds {
			w.observe(cmd, cmd.Err())
		}
		return err
	}
}

// observe records a release script call that Redis answered. A call that
// failed on the wire changed nothing we can know of; a NOSCRIPT reply is
// followed by the same call as EVAL.
func (w *wireLog) observe(cmd redis.Cmder, err error) {
	name := strings.ToLower(cmd.Name())
	if (name != "evalsha" && name != "eval") || err != nil || !isReleaseScript(name, cmd.Args()) {
		return
	}
	refs, results, perr := decodeRelease(cmd)
	w.mu.Lock()
	defer w.mu.Unlock()
	if perr != nil {
		w.malformed = append(w.malformed, fmt.Sprintf("%v: %v", cmd.Args(), perr))
		return
	}
	for i, res := range results {
		w.results[res]++
		if res == "released" {
			w.released[refs[i]]++
		}
	}
}

func decodeRelease(cmd redis.Cmder) ([]holdingRef, []string, error) {
	args := cmd.Args()
	if len(args) < 3 {
		return nil, nil, fmt.Errorf("%d arguments", len(args))
	}
	numKeys, err := strconv.Atoi(fmt.Sprint(args[2]))
	if err != nil || len(args) < 3+numKeys+1 {
		return nil, nil, fmt.Errorf("bad key count %v", args[2])
	}
	keys, argv := args[3:3+numKeys], args[3+numKeys:]
	n, err := strconv.Atoi(fmt.Sprint(argv[0]))
	if err != nil || n != numKeys || len(argv) < 2+n || len(fmt.Sprint(argv[1])) != n {
		return nil, nil, fmt.Errorf("ARGV[1] %v and the flags do not count the %d keys", argv[0], numKeys)
	}
	c, ok := cmd.(*redis.Cmd)
	if !ok {
		return nil, nil, fmt.Errorf("reply of type %T", cmd)
	}
	codes, err := c.Text()
	if err != nil || len(codes) != n {
		return nil, nil, fmt.Errorf("reply %v for %d keys: %v", c.Val(), n, err)
	}
	refs := make([]holdingRef, n)
	results := make([]string, n)
	for i := range n {
		refs[i] = holdingRef{Key: fmt.Sprint(keys[i]), Owner: fmt.Sprint(argv[2+i])}
		res, ok := releaseResultCodes[codes[i]]
		if !ok {
			return nil, nil, fmt.Errorf("result code %q of %s", codes[i], refs[i])
		}
		results[i] = res
	}
	return refs, results, nil
}

// releaseResultCodes are the release script's one-letter results, spelled
// out as the reports spell them.
var releaseResultCodes = map[byte]string{
	'r': string(reaper.ResultReleased), 'g': string(reaper.ResultAlreadyGone), 'o': string(reaper.ResultOwnerChanged),
}

// snapshot returns copies of what was recorded.
func (w *wireLog) snapshot() (released map[holdingRef]int, results map[string]int, malformed []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	released = make(map[holdingRef]int, len(w.released))
	for k, v := range w.released {
		released[k] = v
	}
	results = make(map[string]int, len(w.results))
	for k, v := range w.results {
		results[k] = v
	}
	return released, results, append([]string(nil), w.malformed...)
}

// isReleaseScript tells the release script's calls from the other scripts a
// pass runs (suspects, retiring owners): EVALSHA names it by its SHA-1, EVAL
// sends its source.
func isReleaseScript(name string, args []any) bool {
	if len(args) < 2 {
		return false
	}
	script := fmt.Sprint(args[1])
	if name == "eval" {
		sum := sha1.Sum([]byte(script))
		script = hex.EncodeToString(sum[:])
	}
	return script == redislocks.ReleaseScriptSHA()
}
