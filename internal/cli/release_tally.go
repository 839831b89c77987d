package cli

import (
	"context"
	"log/slog"
	"sort"
	"sync"

	"github.com/lock-reaper/lock-reaper/reaper"
)

// releaseTally is the log handler of text logs above debug level: instead
// of a line per released holding (a dead worker's thousand before the
// report) it counts them per owner, and flush writes one line per owner.
// JSON logs, the audit trail a collector keeps, and debug level keep the
// line per holding; a warning about a holding (its owner changed) is
// passed on as it is.
type releaseTally struct {
	inner slog.Handler
	*tallyCounts
}

type tallyCounts struct {
	mu     sync.Mutex
	owners map[string]*ownerTally
}

// ownerTally counts an owner's holdings by what their release found.
type ownerTally struct {
	released, alreadyGone int
}

func newReleaseTally(inner slog.Handler) *releaseTally {
	return &releaseTally{inner: inner, tallyCounts: &tallyCounts{owners: map[string]*ownerTally{}}}
}

func (h *releaseTally) Enabled(ctx context.Context, l slog.Level) bool {
	return h.inner.Enabled(ctx, l)
}

func (h *releaseTally) Handle(ctx context.Context, r slog.Record) error {
	if r.Level != slog.LevelInfo || r.Message != reaper.LogReleasedHolding {
		return h.inner.Handle(ctx, r)
	}
	var owner, result string
	r.Attrs(func(a slog.Attr) bool {
		switch a.Key {
		case "owner":
			owner = a.Value.String()
		case "result":
			result = a.Value.String()
		}
		return true
	})
	if result != string(reaper.ResultReleased) && result != string(reaper.ResultAlreadyGone) {
		return h.inner.Handle(ctx, r) // a result worth its own line
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	t := h.owners[owner]
	if t == nil {
		t = &ownerTally{}
		h.owners[owner] = t
	}
	if result == string(reaper.ResultReleased) {
		t.released++
	} else {
		t.alreadyGone++
	}
	return nil
}

func (h *releaseTally) WithAttrs(as []slog.Attr) slog.Handler {
	return &releaseTally{inner: h.inner.WithAttrs(as), tallyCounts: h.tallyCounts}
}

func (h *releaseTally) WithGroup(name string) slog.Handler {
	return &releaseTally{inner: h.inner.WithGroup(name), tallyCounts: h.tallyCounts}
}

// flush writes one line per owner counted since the last flush, the owner
// with the most holdings first, and starts counting afresh. A nil tally
// (JSON logs, debug level, the daemon) has nothing to write.
func (h *releaseTally) flush(ctx context.Context) {
	if h == nil {
		return
	}
	h.mu.Lock()
	owners := h.owners
	h.owners = map[string]*ownerTally{}
	h.mu.Unlock()
	names := make([]string, 0, len(owners))
	for n := range owners {
		names = append(names, n)
	}
	sort.Slice(names, func(a, b int) bool {
		ta, tb := owners[names[a]], owners[names[b]]
		if ta.released != tb.released {
			return ta.released > tb.released
		}
		return names[a] < names[b]
	})
	log := slog.New(h.inner)
	for _, n := range names {
		t := owners[n]
		attrs := []slog.Attr{slog.String("owner", n), slog.Int("holdings", t.released)}
		if t.alreadyGone > 0 {
			attrs = append(attrs, slog.Int("already_gone", t.alreadyGone))
		}
		log.LogAttrs(ctx, slog.LevelInfo, "released holdings", attrs...)
	}
}
