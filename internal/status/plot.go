package status

import (
	"fmt"
	"github.com/lock-reaper/lock-reaper/internal/humantext"
	"sort"
	"strings"
	"time"

	"github.com/lock-reaper/lock-reaper/reaper/history"
)

// plot is the history of passes over the last day as an SVG drawn on the
// server (no script library, nothing from another host): a bar per pass of
// the stale holdings it saw, placed by its time, and inside it a narrower
// bar of what it released. A bar's colour says how the pass ended, beside
// the words of its title and the caption. A count axis on the left and a
// time axis below say what the bars measure; every pass draws at least a
// tick on the time axis, so a pass that found nothing stale shows too, and
// while few passes are drawn each bar carries its count, so one pass alone
// reads as a number, not a speck.
type plot struct {
	Width, Height int
	// Left, Top, Right and Base bound the bars' area: Base is the y of the
	// time axis (count 0), Right the x of the window's end.
	Left, Top, Right, Base int
	Bars                   []bar
	Max                    int
	Label                  string
	// Counts and Times are the axes' ticks and labels.
	Counts, Times []tick
	// From and To are the window's ends, for the axis labels.
	From, To time.Time
}

// tick is one mark of an axis: its position (y of a count, x of a time),
// its label, and the label's anchor (start, middle, end).
type tick struct {
	At     int
	Label  string
	Anchor string
}

type bar struct {
	X, Y, W, H int
	Class      string
	Title      string
	// Released is the inner bar of the holdings the pass released.
	RY, RH int
	// Value labels the bar with its count while few bars are drawn; VY is
	// the label's baseline, VX its middle.
	Value  string
	VX, VY int
}

const (
	plotWidth  = 640
	plotHeight = 150
	// The margins hold the axes' labels.
	plotLeft, plotRight, plotTop, plotBottom = 44, 14, 18, 22
	// valuesUpTo is how many bars at most carry their count, valueGap how
	// far apart their labels stand at least.
	valuesUpTo, valueGap = 12, 40
	// timeStep spaces the time axis's ticks, on whole UTC hours.
	timeStep = 3 * time.Hour
)

// plotOf draws passes (newest first, as the history reads them) over the
// day before now, oldest left.
func plotOf(passes []history.Entry, now time.Time) plot {
	from := now.Add(-passesWindow)
	p := plot{Width: plotWidth, Height: plotHeight, Max: 1, From: from, To: now,
		Left: plotLeft, Top: plotTop, Right: plotWidth - plotRight, Base: plotHeight - plotBottom}
	for _, h := range passes {
		p.Max = max(p.Max, h.Stale, h.Released)
	}
	p.Max = roundUp(p.Max)
	inner, tall := p.Right-p.Left, p.Base-p.Top
	// Bars narrow as passes crowd the day, to one pixel at a pass a minute.
	w := min(max(inner/max(len(passes), 1)-1, 1), 12)
	height := func(n int) int {
		if n <= 0 {
			return 0
		}
		return max(n*tall/p.Max, 2)
	}
	p.Counts = countTicks(p.Max, p.Base, tall)
	p.Times = timeTicks(from, now, p.Left, inner)
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
		x := p.Left + int(h.At.Sub(from)*time.Duration(inner)/passesWindow) - w/2
		// A pass that saw nothing stale still marks its time.
		sh, rh := max(height(h.Stale), 2), height(h.Released)
		x = min(max(x, p.Left), p.Right-w)
		p.Bars = append(p.Bars, bar{X: x, Y: p.Base - sh, W: w, H: sh, Class: class,
			RY: p.Base - rh, RH: rh, Value: num(h.Stale), VX: x + w/2, VY: p.Base - sh - 3,
			Title: fmt.Sprintf("%s: %s stale, %s released, %s updated, took %s", passWords(h), num(h.Stale), num(h.Released),
				plural(h.Updated, "task"), humantext.Duration(h.Duration))})
	}
	labelValues(p.Bars)
	parts := []string{fmt.Sprintf("%s in the last %s, at most %s in one; %s released in all",
		plural(len(p.Bars), "pass", "passes"), humantext.Duration(passesWindow), plural(maxStale(passes, from, now), "stale holding"), plural(released, "holding"))}
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

// maxStale is the most stale holdings one pass of the window saw.
func maxStale(passes []history.Entry, from, to time.Time) int {
	n := 0
	for _, h := range passes {
		if !h.At.Before(from) && !h.At.After(to) {
			n = max(n, h.Stale)
		}
	}
	return n
}

// roundUp is the count axis's top: n rounded up to 1, 2 or 5 times a power
// of ten, so its middle tick is a round number too.
func roundUp(n int) int {
	for step := 1; ; step *= 10 {
		for _, m := range []int{1, 2, 5} {
			if n <= m*step {
				return m * step
			}
		}
	}
}

// countTicks are the count axis's marks: 0, the middle and the top.
func countTicks(top, base, tall int) []tick {
	out := []tick{{At: base, Label: "0", Anchor: "end"}}
	if top%2 == 0 {
		out = append(out, tick{At: base - tall/2, Label: num(top / 2), Anchor: "end"})
	}
	return append(out, tick{At: base - tall, Label: num(top), Anchor: "end"})
}

// timeTicks are the time axis's marks: the window's start on the left, every
// whole timeStep of UTC between, and "now" on the right; a mark too close
// to an end to keep its label apart is left out.
func timeTicks(from, to time.Time, left, inner int) []tick {
	x := func(t time.Time) int { return left + int(t.Sub(from)*time.Duration(inner)/to.Sub(from)) }
	out := []tick{{At: left, Label: from.UTC().Format("15:04"), Anchor: "start"}}
	for t := from.UTC().Truncate(timeStep).Add(timeStep); t.Before(to); t = t.Add(timeStep) {
		if at := x(t); at-left >= 48 && left+inner-at >= 90 {
			out = append(out, tick{At: at, Label: t.Format("15:04"), Anchor: "middle"})
		}
	}
	return append(out, tick{At: left + inner, Label: "now " + to.UTC().Format("15:04") + " UTC", Anchor: "end"})
}

// labelValues keeps the counts of at most valuesUpTo bars, and of those the
// tallest where labels would overlap: a pass that found nothing stale is a
// tick without a number, and two passes a second apart one number.
func labelValues(bars []bar) {
	order := make([]int, 0, len(bars))
	for i := range bars {
		if bars[i].Value != "0" {
			order = append(order, i)
		}
	}
	sort.SliceStable(order, func(a, b int) bool { return bars[order[a]].H > bars[order[b]].H })
	var kept []int
	for _, i := range order {
		clear := len(kept) < valuesUpTo
		for _, k := range kept {
			if abs(bars[k].VX-bars[i].VX) < valueGap {
				clear = false
			}
		}
		if clear {
			kept = append(kept, i)
		}
	}
	keep := make(map[int]bool, len(kept))
	for _, k := range kept {
		keep[k] = true
	}
	for i := range bars {
		if !keep[i] {
			bars[i].Value = ""
		}
	}
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}
