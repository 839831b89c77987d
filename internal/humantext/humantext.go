// Package humantext writes durations and counts as people read them: the
// status page's and explain's words, "23 h" and "1,067", where Go's own
// forms are "23h0m0s" and "1067".
package humantext

import (
	"math"
	"strconv"
	"strings"
	"time"
)

// Duration writes a duration as a person says it: the largest unit, with
// the next one while the first is under 10 ("3 min 20 s", "23 h", "2 d 4
// h"). Between one and two days hours read better than "1 d 7 h".
func Duration(d time.Duration) string {
	if d >= time.Second {
		d = d.Round(time.Second)
	}
	switch {
	case d < 0:
		return "in " + Duration(-max(d, -math.MaxInt64))
	case d == 0:
		return "0 s"
	case d < time.Second:
		return strconv.FormatInt(max(d.Milliseconds(), 1), 10) + " ms"
	case d < time.Minute:
		return units(d, time.Second, "s", 0, "")
	case d < time.Hour:
		return units(d, time.Minute, "min", time.Second, "s")
	case d < 48*time.Hour:
		return units(d, time.Hour, "h", time.Minute, "min")
	}
	return units(d, 24*time.Hour, "d", time.Hour, "h")
}

// units writes d in big units, and the rest in small ones while there are
// fewer than 10 big ones.
func units(d, big time.Duration, bigName string, small time.Duration, smallName string) string {
	if small == 0 || d >= 10*big {
		return Count(int(d.Round(big)/big)) + " " + bigName
	}
	d = d.Round(small)
	s := Count(int(d/big)) + " " + bigName
	if rest := d % big / small; rest > 0 {
		s += " " + strconv.Itoa(int(rest)) + " " + smallName
	}
	return s
}

// Count writes a count with thousands separators: 1,067.
func Count(n int) string {
	s := strconv.Itoa(max(n, -n))
	var b strings.Builder
	if n < 0 {
		b.WriteByte('-')
	}
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	return b.String()
}
