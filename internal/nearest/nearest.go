// Package nearest finds the known names closest to a misspelt one, for the
// "did you mean" hints of configuration errors and of owner names.
package nearest

import "sort"

// Names returns up to n of candidates nearest to name, nearest first (ties
// by name), leaving out those too far to be a plausible misspelling unless
// keepFar is set.
func Names(name string, candidates []string, n int, keepFar bool) []string {
	type scored struct {
		name string
		dist int
	}
	seen := map[string]bool{}
	var all []scored
	for _, c := range candidates {
		if seen[c] {
			continue
		}
		seen[c] = true
		d := Distance(name, c)
		if keepFar || d <= Plausible(name) {
			all = append(all, scored{c, d})
		}
	}
	sort.Slice(all, func(a, b int) bool {
		if all[a].dist != all[b].dist {
			return all[a].dist < all[b].dist
		}
		return all[a].name < all[b].name
	})
	out := []string{}
	for i := 0; i < len(all) && i < n; i++ {
		out = append(out, all[i].name)
	}
	return out
}

// Plausible is the largest distance still read as a misspelling of name.
func Plausible(name string) int { return max(3, len([]rune(name))/3) }

// Distance is the Levenshtein distance with adjacent transpositions counted
// as one edit (ULR is one typo from URL).
func Distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}
