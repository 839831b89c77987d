package cli

import (
	"strconv"
	"strings"
	"unicode"
)

// quoteText makes a string read from Redis or the database safe to print on
// a terminal: one with only printable characters is printed as it is, any
// other in Go's quoted form (strconv.Quote), so that an escape sequence in a
// key, owner or task name can neither clear the screen nor forge a line.
func quoteText(s string) string {
	if strings.IndexFunc(s, func(r rune) bool { return !unicode.IsPrint(r) || r == unicode.ReplacementChar }) < 0 {
		return s
	}
	return strconv.Quote(s)
}
