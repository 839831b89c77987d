package redislocks

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/lock-reaper/lock-reaper/reaper/judge"
	"github.com/redis/go-redis/v9"
)

// ScanMatch narrows the keyspace walk to keys that can be Pulp locks (task:*
// and pulp:*) with one SCAN instead of one per prefix; the exact prefixes are
// checked on this side. The benchmark's baseline walks with the same pattern.
const ScanMatch = "[tp]*"

// Reader reads every Pulp lock holding from Redis.
type Reader struct {
	RDB redis.UniversalClient
	// ScanCount is the COUNT hint of each SCAN call.
	ScanCount int
	// BatchSize is the number of keys per pipelined read.
	BatchSize int
	// Timeout is the deadline of each Redis call.
	Timeout time.Duration
	// Progress, when set, is told how many keys have been looked at.
	Progress func(keys int)
	// Log, when set, is told once that values are read without MGET, or
	// values or sets without their size checked first, or sets without the
	// member script.
	Log *slog.Logger
	// noMGET is set once Redis refused MGET to this user.
	noMGET bool
	// noSTRLEN is set once Redis refused STRLEN to this user.
	noSTRLEN bool
	// noMemoryUsage is set once Redis refused MEMORY USAGE to this user.
	noMemoryUsage bool
	// noMemberScript is set once Redis refused the script that reads
	// shared locks' members (set_members.go) to this user.
	noMemberScript bool
}

// Snapshot is what one read of Redis found.
type Snapshot struct {
	Holdings []judge.Holding
	Ignored  []Ignored
	// Keys counts the lock keys read.
	Keys int
	// ActiveOwners counts the owners pulp:active_owners lists.
	ActiveOwners int
}

// Ignored is a key under a lock prefix that is not a Pulp lock. It is
// reported and never touched; the judge never sees it.
type Ignored struct {
	Key    string
	Type   string
	Reason string
}

// Read collects candidate keys from the owner registry and, on a full scan,
// from a keyspace SCAN that also finds legacy (unregistered) locks, and reads
// their values in pipelined batches.
//
// Redis does the work of a pass while the SCAN walks the keyspace: the walk
// starts while the registry is read, on a connection of its own, and sends
// on the lock keys of each page at once, so that the next SCAN call does
// not wait for them to be looked up; the registered keys are read, then the
// legacy keys the walk finds as they come, in the gaps between SCAN calls.
// Every key is read once, and every read still happens before the database
// is read.
func (rr *Reader) Read(ctx context.Context, fullScan bool) (Snapshot, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// The first failure stops the other side; its error is the one reported.
	var first error
	var once sync.Once
	fail := func(err error) {
		once.Do(func() { first = err; cancel() })
	}
	registry := make(chan *ownerRegistry, 1)
	legacy := make(chan []string, 2)
	var wg sync.WaitGroup
	if fullScan {
		pages := make(chan []string, scanPages)
		wg.Add(2)
		go func() {
			defer wg.Done()
			defer close(pages)
			if err := rr.walk(ctx, pages); err != nil {
				fail(err)
			}
		}()
		go func() {
			defer wg.Done()
			defer close(legacy)
			if err := rr.sift(ctx, registry, pages, legacy); err != nil {
				fail(err)
			}
		}()
	} else {
		close(legacy)
	}
	var snap Snapshot
	if reg, err := rr.readRegistry(ctx); err != nil {
		fail(err)
	} else {
		registry <- reg
		snap.ActiveOwners = len(reg.owners)
		snap.Holdings = make([]judge.Holding, 0, reg.size())
		if err := rr.readKeys(ctx, reg, legacy, &snap); err != nil {
			fail(err)
		}
	}
	wg.Wait()
	if first != nil {
		return Snapshot{}, first
	}
	// The holdings outlive the read: legacy keys found by the walk may have
	// grown them to twice what they hold.
	if len(snap.Holdings) < cap(snap.Holdings)-cap(snap.Holdings)/8 {
		snap.Holdings = slices.Clone(snap.Holdings)
	}
	// Keys are read in no particular order; the report lists what it ignored
	// by key, members of one set in their order.
	slices.SortStableFunc(snap.Ignored, func(a, b Ignored) int { return strings.Compare(a.Key, b.Key) })
	return snap, nil
}

// readKeys reads the registered keys, then the legacy keys the walk sends,
// batch by batch. The holdings are in no particular order: the judge walks
// them in its own.
func (rr *Reader) readKeys(ctx context.Context, reg *ownerRegistry, legacy <-chan []string, snap *Snapshot) error {
	read := func(batch []string) error {
		if err := rr.readBatch(ctx, batch, reg, snap); err != nil {
			return err
		}
		snap.Keys += len(batch)
		if rr.Progress != nil {
			rr.Progress(snap.Keys)
		}
		return nil
	}
	registered := reg.lockKeys()
	for start := 0; start < len(registered); start += rr.BatchSize {
		if err := read(registered[start:min(start+rr.BatchSize, len(registered))]); err != nil {
			return err
		}
	}
	for batch := range legacy {
		if err := read(batch); err != nil {
			return err
		}
	}
	return nil
}

func isLockKeyName(k string) bool {
	return strings.HasPrefix(k, judge.TaskKeyPrefix) || strings.HasPrefix(k, judge.ResourceKeyPrefix)
}

// scanPages is how many pages of lock keys the walk may run ahead of the
// registry being read and of the keys being looked up.
const scanPages = 256

// walk runs SCAN over the whole keyspace and sends the lock keys of each page.
func (rr *Reader) walk(ctx context.Context, pages chan<- []string) error {
	var cursor uint64
	for {
		cctx, cancel := context.WithTimeout(ctx, rr.Timeout)
		keys, next, err := rr.RDB.Scan(cctx, cursor, ScanMatch, int64(rr.ScanCount)).Result()
		cancel()
		if err != nil {
			return fmt.Errorf("scan keyspace: %w", err)
		}
		page := keys[:0]
		for _, k := range keys {
			if isLockKeyName(k) {
				page = append(page, k)
			}
		}
		if len(page) > 0 {
			select {
			case pages <- page:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		if next == 0 {
			return nil
		}
		cursor = next
	}
}

// sift sends on, in batches, the lock keys the walk found that the registry
// does not list: they were read with the registered ones. SCAN may return a
// key twice; it is sent once.
func (rr *Reader) sift(ctx context.Context, registry <-chan *ownerRegistry, pages <-chan []string, out chan<- []string) error {
	var reg *ownerRegistry
	select {
	case reg = <-registry:
	case <-ctx.Done():
		return ctx.Err()
	}
	seen := map[string]struct{}{}
	var batch []string
	send := func() error {
		select {
		case out <- batch:
			batch = nil
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	for page := range pages {
		for _, k := range page {
			if reg.has(k) {
				continue
			}
			if _, dup := seen[k]; dup {
				continue
			}
			seen[k] = struct{}{}
			if batch = append(batch, k); len(batch) == rr.BatchSize {
				if err := send(); err != nil {
					return err
				}
			}
		}
	}
	if len(batch) == 0 {
		return nil
	}
	return send()
}
