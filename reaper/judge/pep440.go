package judge

import (
	"cmp"
	"slices"
	"strings"
)

// pulpcore decides whether a worker may run a task by comparing versions
// with packaging.version.parse (PEP 440). The reaper compares them the same
// way, so that it calls stranded exactly the tasks pulpcore's workers
// refuse: this file is packaging's parse and ordering, standard library only.

// pepVersion is a parsed PEP 440 version, in packaging's normal form.
// Numbers are kept as digit strings without leading zeros, so that no
// number is too large to compare.
type pepVersion struct {
	epoch   string
	release []string
	// preLetter is "a", "b" or "rc"; "" when there is no pre-release.
	preLetter string
	pre       string
	hasPost   bool
	post      string
	hasDev    bool
	dev       string
	// local is the local segment's parts, lowercase; nil when none.
	local []string
}

// preSpellings are the pre-release spellings PEP 440 normalises.
var preSpellings = []struct{ spelling, normal string }{
	// Longer spellings first: "preview" before "pre", "rc" before "c".
	{"preview", "rc"}, {"alpha", "a"}, {"beta", "b"}, {"pre", "rc"}, {"rc", "rc"}, {"a", "a"}, {"b", "b"}, {"c", "rc"},
}

// versionScanner walks a lowercase version string.
type versionScanner struct {
	s string
	i int
}

func (v *versionScanner) rest() string { return v.s[v.i:] }

// digits takes a run of digits, normalised ("" when there is none).
func (v *versionScanner) digits() (string, bool) {
	start := v.i
	for v.i < len(v.s) && v.s[v.i] >= '0' && v.s[v.i] <= '9' {
		v.i++
	}
	if v.i == start {
		return "", false
	}
	return trimZeros(v.s[start:v.i]), true
}

// separator takes one of - _ . when present.
func (v *versionScanner) separator() bool {
	if v.i < len(v.s) && strings.IndexByte("-_.", v.s[v.i]) >= 0 {
		v.i++
		return true
	}
	return false
}

// word takes w when the rest starts with it.
func (v *versionScanner) word(w string) bool {
	if strings.HasPrefix(v.rest(), w) {
		v.i += len(w)
		return true
	}
	return false
}

// optional runs take and keeps its progress only when it succeeds.
func (v *versionScanner) optional(take func() bool) bool {
	at := v.i
	if take() {
		return true
	}
	v.i = at
	return false
}

// trimZeros is a digit string without leading zeros ("0" for zero).
func trimZeros(d string) string {
	d = strings.TrimLeft(d, "0")
	if d == "" {
		return "0"
	}
	return d
}

// parseVersion parses text as packaging.version.Version does; false when
// it is not a PEP 440 version (packaging raises InvalidVersion).
func parseVersion(text string) (pepVersion, bool) {
	var p pepVersion
	sc := &versionScanner{s: strings.ToLower(strings.TrimSpace(text))}
	sc.word("v")
	// Epoch: N! before the release.
	sc.optional(func() bool {
		d, ok := sc.digits()
		if ok && sc.word("!") {
			p.epoch = d
			return true
		}
		return false
	})
	if p.epoch == "" {
		p.epoch = "0"
	}
	for {
		d, ok := sc.digits()
		if !ok {
			return pepVersion{}, false
		}
		p.release = append(p.release, d)
		if !sc.optional(func() bool { return sc.word(".") && sc.i < len(sc.s) && sc.s[sc.i] >= '0' && sc.s[sc.i] <= '9' }) {
			break
		}
	}
	sc.optional(func() bool { return p.takePre(sc) })
	sc.optional(func() bool { return p.takePost(sc) })
	sc.optional(func() bool { return p.takeDev(sc) })
	if sc.word("+") {
		if !p.takeLocal(sc) {
			return pepVersion{}, false
		}
	}
	if sc.rest() != "" {
		return pepVersion{}, false
	}
	return p, true
}

// takePre takes [-_.]?(a|b|c|rc|alpha|beta|pre|preview)[-_.]?N?.
func (p *pepVersion) takePre(sc *versionScanner) bool {
	sc.separator()
	for _, s := range preSpellings {
		if sc.word(s.spelling) {
			p.preLetter, p.pre = s.normal, "0"
			// As packaging's pattern: a separator, then a number, each optional.
			sc.separator()
			if d, ok := sc.digits(); ok {
				p.pre = d
			}
			return true
		}
	}
	return false
}

// takePost takes -N, or [-_.]?(post|rev|r)[-_.]?N?.
func (p *pepVersion) takePost(sc *versionScanner) bool {
	if sc.optional(func() bool {
		if !sc.word("-") {
			return false
		}
		d, ok := sc.digits()
		p.post = d
		return ok
	}) {
		p.hasPost = true
		return true
	}
	sc.separator()
	for _, w := range []string{"post", "rev", "r"} {
		if sc.word(w) {
			p.hasPost, p.post = true, "0"
			// As packaging's pattern: a separator, then a number, each optional.
			sc.separator()
			if d, ok := sc.digits(); ok {
				p.post = d
			}
			return true
		}
	}
	return false
}

// takeDev takes [-_.]?dev[-_.]?N?.
func (p *pepVersion) takeDev(sc *versionScanner) bool {
	sc.separator()
	if !sc.word("dev") {
		return false
	}
	p.hasDev, p.dev = true, "0"
	sc.separator()
	if d, ok := sc.digits(); ok {
		p.dev = d
	}
	return true
}

// takeLocal takes [a-z0-9]+([-_.][a-z0-9]+)* to the end.
func (p *pepVersion) takeLocal(sc *versionScanner) bool {
	for {
		start := sc.i
		for sc.i < len(sc.s) && (sc.s[sc.i] >= 'a' && sc.s[sc.i] <= 'z' || sc.s[sc.i] >= '0' && sc.s[sc.i] <= '9') {
			sc.i++
		}
		if sc.i == start {
			return false
		}
		p.local = append(p.local, sc.s[start:sc.i])
		if sc.i == len(sc.s) {
			return true
		}
		if !sc.separator() {
			return false
		}
	}
}

// compareNumbers orders two normalised digit strings by value.
func compareNumbers(a, b string) int {
	return cmp.Or(cmp.Compare(len(a), len(b)), strings.Compare(a, b))
}

// isNumber says a local part is all digits.
func isNumber(s string) bool {
	return strings.Trim(s, "0123456789") == ""
}

// compareVersions orders two parsed versions as packaging's _cmpkey does.
func compareVersions(a, b pepVersion) int {
	if c := compareNumbers(a.epoch, b.epoch); c != 0 {
		return c
	}
	if c := compareRelease(a.release, b.release); c != 0 {
		return c
	}
	if c := cmp.Compare(a.preRank(), b.preRank()); c != 0 {
		return c
	}
	if a.preLetter != "" {
		if c := cmp.Or(strings.Compare(a.preLetter, b.preLetter), compareNumbers(a.pre, b.pre)); c != 0 {
			return c
		}
	}
	if c := compareOptional(a.hasPost, a.post, b.hasPost, b.post, -1); c != 0 {
		return c
	}
	if c := compareOptional(a.hasDev, a.dev, b.hasDev, b.dev, +1); c != 0 {
		return c
	}
	return compareLocal(a.local, b.local)
}

// compareRelease orders release segments with trailing zeros dropped, so
// that 1.0 == 1.0.0.
func compareRelease(a, b []string) int {
	trim := func(r []string) []string {
		for len(r) > 1 && r[len(r)-1] == "0" {
			r = r[:len(r)-1]
		}
		return r
	}
	return slices.CompareFunc(trim(a), trim(b), compareNumbers)
}

// preRank places the pre-release slot: a dev release of the final (1.0.dev1,
// no pre, no post) before every pre-release, a pre-release by its letter and
// number, and no pre-release after them all. "a" < "b" < "rc" compare as
// strings.
func (p pepVersion) preRank() int {
	switch {
	case p.preLetter == "" && !p.hasPost && p.hasDev:
		return -1
	case p.preLetter == "":
		return 1
	}
	return 0
}

// compareOptional orders a segment that may be absent; absent ranks as
// absentRank (-1 below every number, +1 above).
func compareOptional(aHas bool, a string, bHas bool, b string, absentRank int) int {
	switch {
	case aHas && bHas:
		return compareNumbers(a, b)
	case aHas == bHas:
		return 0
	case aHas:
		return -absentRank
	}
	return absentRank
}

// compareLocal orders local segments: none first; then part by part, a
// number above a word, numbers by value, words as strings; a longer segment
// after its prefix.
func compareLocal(a, b []string) int {
	return slices.CompareFunc(a, b, func(x, y string) int {
		xn, yn := isNumber(x), isNumber(y)
		switch {
		case xn && yn:
			return compareNumbers(trimZeros(x), trimZeros(y))
		case xn:
			return 1
		case yn:
			return -1
		}
		return strings.Compare(x, y)
	})
}

// VersionAtLeast says have is a PEP 440 version at or above least. When
// either does not parse it says false: pulpcore's worker would raise on it
// (InvalidVersion) and never run the task, so the reaper never counts such
// a worker as able to run it.
func VersionAtLeast(have, least string) bool {
	h, ok := parseVersion(have)
	if !ok {
		return false
	}
	l, ok := parseVersion(least)
	if !ok {
		return false
	}
	return compareVersions(h, l) >= 0
}
