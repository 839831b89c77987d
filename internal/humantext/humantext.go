// Package humantext writes durations and counts as people read them. Every
// duration the program prints goes through it, in one of three forms: the
// status page's and explain's words ("23 h", Duration), the terminal's
// rounded Go form ("23h0m0s", "12.3s", Short), and the configuration's
// own ("1m", Setting), which reads back as the value it wrote.
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

// Short writes a duration in Go's form, rounded to what a reader needs:
// milliseconds under a second, tenths under a minute, whole seconds above
// ("250ms", "12.3s", "23h0m0s"). The terminal's reports and the reasons
// the pass gives use it.
func Short(d time.Duration) string {
	switch abs := max(d, -d); {
	case abs < time.Second:
		return d.Round(time.Millisecond).String()
	case abs < time.Minute:
		return d.Round(100 * time.Millisecond).String()
	default:
		return d.Round(time.Second).String()
	}
}

// Setting writes a duration the way the configuration is written, so that
// it reads back as the same value: 1m, not 1m0s; 2h30m, not 2h30m0s.
func Setting(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
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
