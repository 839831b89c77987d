package status

import (
	"fmt"
	"github.com/lock-reaper/lock-reaper/internal/humantext"
	"strings"
	"time"

	"github.com/lock-reaper/lock-reaper/reaper/history"
)

// plot is the history of passes over the last day as an SVG drawn on the
// server (no script library, nothing from another host): a bar per pass of
// the stale holdings it saw, placed by its time, and inside it a narrower
// bar of what it released. A bar's colour says how the pass ended, beside
// the words of its title and the caption.
type plot struct {
	Width, Height int
	Bars          []bar
	Max           int
	Label         string
	// From and To are the window's ends, for the axis labels.
	From, To time.Time
}

type bar struct {
	X, Y, W, H int
	Class      string
	Title      string
	// Released is the inner bar of the holdings the pass released.
	RY, RH int
}

const (
	plotWidth  = 600
	plotHeight = 120
)

// plotOf draws passes (newest first, as the history reads them) over the
// day before now, oldest left.
func plotOf(passes []history.Entry, now time.Time) plot {
	from := now.Add(-passesWindow)
	p := plot{Width: plotWidth, Height: plotHeight, Max: 1, From: from, To: now}
	for _, h := range passes {
		p.Max = max(p.Max, h.Stale, h.Released)
	}
	// Bars narrow as passes crowd the day, to one pixel at a pass a minute.
	w := min(max(plotWidth/max(len(passes), 1)-1, 1), 12)
	height := func(n int) int {
		if n <= 0 {
			return 0
		}
		return max(n*(plotHeight-10)/p.Max, 2)
	}
	var acted, guarded, failed, released int
	for i := len(passes) - 1; i >= 0; i-- {
		h := passes[i]
		if h.At.Before(from) || h.At.After(now) {
			continue
		}
		class := "quiet"
		switch {
		case h.Error != "":
			class, failed = "failed", failed+1
		case len(h.Guards) > 0:
			class, guarded = "guarded", guarded+1
		case h.Released > 0 || h.Updated > 0:
			class, acted = "acted", acted+1
		}
		released += h.Released
		x := int(h.At.Sub(from) * plotWidth / passesWindow)
		sh, rh := height(h.Stale), height(h.Released)
		p.Bars = append(p.Bars, bar{X: min(x, plotWidth-w), Y: plotHeight - sh, W: w, H: sh, Class: class,
			RY: plotHeight - rh, RH: rh,
			Title: fmt.Sprintf("%s: %s stale, %s released, %s updated, took %s", passWords(h), num(h.Stale), num(h.Released),
				plural(h.Updated, "task"), humantext.Duration(h.Duration))})
	}
	parts := []string{fmt.Sprintf("%s in the last %s, at most %s in one; %s released in all",
		plural(len(p.Bars), "pass", "passes"), humantext.Duration(passesWindow), plural(p.Max, "stale holding"), plural(released, "holding"))}
	if acted > 0 {
		parts = append(parts, fmt.Sprintf("%s released or updated", num(acted)))
	}
	if guarded > 0 {
		parts = append(parts, fmt.Sprintf("%s held back by a guard", num(guarded)))
	}
	if failed > 0 {
		parts = append(parts, fmt.Sprintf("%s failed", num(failed)))
	}
	p.Label = strings.Join(parts, "; ")
	return p
}
