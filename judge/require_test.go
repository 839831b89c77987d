package judge

import (
	"cmp"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// require is the few assertions the judge's tests use, on the standard
// library alone: the judge is a module with no requirements, tests included.
// Each stops the test at the first failure, as testify's require does.
var require asserts

type asserts struct{}

func failed(t testing.TB, msg []any, format string, args ...any) {
	t.Helper()
	text := fmt.Sprintf(format, args...)
	if len(msg) > 0 {
		if f, ok := msg[0].(string); ok {
			text = fmt.Sprintf(f, msg[1:]...) + ": " + text
		}
	}
	t.Fatal(text)
}

func (asserts) Equal(t testing.TB, want, got any, msg ...any) {
	t.Helper()
	if !reflect.DeepEqual(want, got) {
		failed(t, msg, "not equal:\nwant %#v\n got %#v", want, got)
	}
}

func (asserts) NotEqual(t testing.TB, a, b any, msg ...any) {
	t.Helper()
	if reflect.DeepEqual(a, b) {
		failed(t, msg, "both are %#v", a)
	}
}

func (asserts) True(t testing.TB, v bool, msg ...any) {
	t.Helper()
	if !v {
		failed(t, msg, "want true")
	}
}

func (asserts) False(t testing.TB, v bool, msg ...any) {
	t.Helper()
	if v {
		failed(t, msg, "want false")
	}
}

// length is the length of a string, slice, map, array or channel; -1 for
// other values.
func length(v any) int {
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.String, reflect.Slice, reflect.Map, reflect.Array, reflect.Chan:
		return rv.Len()
	case reflect.Pointer:
		if rv.IsNil() {
			return 0
		}
		return length(rv.Elem().Interface())
	case reflect.Invalid:
		return 0
	}
	return -1
}

func isEmpty(v any) bool {
	if n := length(v); n >= 0 {
		return n == 0
	}
	return v == nil || reflect.ValueOf(v).IsZero()
}

func (asserts) Len(t testing.TB, v any, n int, msg ...any) {
	t.Helper()
	if length(v) != n {
		failed(t, msg, "want length %d, got %d: %#v", n, length(v), v)
	}
}

func (asserts) Empty(t testing.TB, v any, msg ...any) {
	t.Helper()
	if !isEmpty(v) {
		failed(t, msg, "want empty, got %#v", v)
	}
}

func (asserts) NotEmpty(t testing.TB, v any, msg ...any) {
	t.Helper()
	if isEmpty(v) {
		failed(t, msg, "want something, got %#v", v)
	}
}

func (asserts) Zero(t testing.TB, v any, msg ...any) {
	t.Helper()
	if v != nil && !reflect.ValueOf(v).IsZero() {
		failed(t, msg, "want zero, got %#v", v)
	}
}

func isNil(v any) bool {
	if v == nil {
		return true
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Interface, reflect.Func, reflect.Chan:
		return rv.IsNil()
	}
	return false
}

func (asserts) Nil(t testing.TB, v any, msg ...any) {
	t.Helper()
	if !isNil(v) {
		failed(t, msg, "want nil, got %#v", v)
	}
}

func (asserts) NotNil(t testing.TB, v any, msg ...any) {
	t.Helper()
	if isNil(v) {
		failed(t, msg, "want non-nil")
	}
}

func (asserts) NoError(t testing.TB, err error, msg ...any) {
	t.Helper()
	if err != nil {
		failed(t, msg, "unexpected error: %v", err)
	}
}

func (asserts) Error(t testing.TB, err error, msg ...any) {
	t.Helper()
	if err == nil {
		failed(t, msg, "want an error")
	}
}

// contains says a string holds a substring, a slice or array an element
// equal to elem, or a map the key elem.
func contains(in, elem any) bool {
	if s, ok := in.(string); ok {
		sub, _ := elem.(string)
		return strings.Contains(s, sub)
	}
	rv := reflect.ValueOf(in)
	switch rv.Kind() {
	case reflect.Slice, reflect.Array:
		for i := range rv.Len() {
			if reflect.DeepEqual(rv.Index(i).Interface(), elem) {
				return true
			}
		}
	case reflect.Map:
		for _, k := range rv.MapKeys() {
			if reflect.DeepEqual(k.Interface(), elem) {
				return true
			}
		}
	}
	return false
}

func (asserts) Contains(t testing.TB, in, elem any, msg ...any) {
	t.Helper()
	if !contains(in, elem) {
		failed(t, msg, "%#v does not contain %#v", in, elem)
	}
}

func (asserts) NotContains(t testing.TB, in, elem any, msg ...any) {
	t.Helper()
	if contains(in, elem) {
		failed(t, msg, "%#v contains %#v", in, elem)
	}
}

// ordered compares two values of one ordered kind.
func ordered(a, b any) (int, bool) {
	ra, rb := reflect.ValueOf(a), reflect.ValueOf(b)
	if ra.Type() != rb.Type() {
		return 0, false
	}
	switch {
	case ra.CanInt():
		return cmp.Compare(ra.Int(), rb.Int()), true
	case ra.CanUint():
		return cmp.Compare(ra.Uint(), rb.Uint()), true
	case ra.CanFloat():
		return cmp.Compare(ra.Float(), rb.Float()), true
	case ra.Kind() == reflect.String:
		return cmp.Compare(ra.String(), rb.String()), true
	}
	return 0, false
}

func (asserts) Less(t testing.TB, a, b any, msg ...any) {
	t.Helper()
	if c, ok := ordered(a, b); !ok || c >= 0 {
		failed(t, msg, "want %v < %v", a, b)
	}
}

func (asserts) LessOrEqual(t testing.TB, a, b any, msg ...any) {
	t.Helper()
	if c, ok := ordered(a, b); !ok || c > 0 {
		failed(t, msg, "want %v <= %v", a, b)
	}
}

func (asserts) GreaterOrEqual(t testing.TB, a, b any, msg ...any) {
	t.Helper()
	if c, ok := ordered(a, b); !ok || c < 0 {
		failed(t, msg, "want %v >= %v", a, b)
	}
}

func (asserts) Positive(t testing.TB, a any, msg ...any) {
	t.Helper()
	if c, ok := ordered(a, reflect.Zero(reflect.TypeOf(a)).Interface()); !ok || c <= 0 {
		failed(t, msg, "want %v > 0", a)
	}
}

func (asserts) Failf(t testing.TB, failure, format string, args ...any) {
	t.Helper()
	t.Fatalf("%s: %s", failure, fmt.Sprintf(format, args...))
}

func (asserts) JSONEq(t testing.TB, want, got string, msg ...any) {
	t.Helper()
	var w, g any
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		failed(t, msg, "want is not JSON: %v", err)
	}
	if err := json.Unmarshal([]byte(got), &g); err != nil {
		failed(t, msg, "got is not JSON: %v", err)
	}
	if !reflect.DeepEqual(w, g) {
		failed(t, msg, "JSON differs:\nwant %s\n got %s", want, got)
	}
}
