package status

import (
	"fmt"
	"strings"
)

// plot is the overview's history of passes as an SVG drawn on the server:
// a bar per pass of the stale holdings it saw, a mark where it released or
// updated something or a guard tripped.
type plot struct {
	Width, Height int
	Bars          []bar
	Max           int
	Label         string
}

type bar struct {
	X, Y, W, H int
	Class      string
	Title      string
}

const (
	plotWidth  = 600
	plotHeight = 120
)

func plotOf(history []PassPoint) plot {
	p := plot{Width: plotWidth, Height: plotHeight, Max: 1}
	for _, h := range history {
		p.Max = max(p.Max, h.Stale)
	}
	n := max(len(history), 1)
	w := plotWidth / n
	var acted, guarded, failed int
	for i, h := range history {
		height := h.Stale * (plotHeight - 10) / p.Max
		if h.Stale > 0 {
			height = max(height, 2)
		}
		class := "quiet"
		switch {
		case h.Error:
			class, failed = "failed", failed+1
		case h.Guards > 0:
			class, guarded = "guarded", guarded+1
		case h.Released > 0 || h.TasksUpdated > 0:
			class, acted = "acted", acted+1
		}
		p.Bars = append(p.Bars, bar{X: i * w, Y: plotHeight - height, W: max(w-1, 1), H: height, Class: class,
			Title: fmt.Sprintf("%s: %s stale, %s released, %s updated, %s, took %s",
				clock(h.At), num(h.Stale), num(h.Released), plural(h.TasksUpdated, "task"), plural(h.Guards, "guard"), human(h.Duration))})
	}
	parts := []string{fmt.Sprintf("%s, at most %s", plural(len(history), "pass", "passes"), plural(p.Max, "stale holding"))}
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
