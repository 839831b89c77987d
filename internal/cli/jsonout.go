package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"github.com/lock-reaper/lock-reaper/reaper"
)

// Formats of what a command prints on standard output (the output setting).
// json is one compact line, for log collectors and jq; json-pretty is the
// same document indented, for a human reading it.
const (
	formatText       = "text"
	formatJSON       = "json"
	formatJSONPretty = "json-pretty"
)

// isJSON says the format is one of the JSON forms.
func isJSON(format string) bool { return format == formatJSON || format == formatJSONPretty }

// jsonIndent is the indentation of json-pretty.
const jsonIndent = "  "

// writeJSON prints v as one JSON document ending in a newline: on one line,
// or indented for json-pretty.
func writeJSON(w io.Writer, format string, v any) error {
	enc := json.NewEncoder(w)
	if format == formatJSONPretty {
		enc.SetIndent("", jsonIndent)
	}
	return enc.Encode(v)
}

// writeJSONReport prints the report as writeJSON would, byte for byte, but
// without holding the document in memory: a pass over an incident lists
// hundreds of thousands of findings, and encoding/json builds the whole
// document in a buffer before writing it (and json-pretty a second one).
// The long lists are marshaled as null with the rest of the report, then
// each is written in their place one member at a time.
func writeJSONReport(w io.Writer, format string, rep *reaper.Report) error {
	pretty := format == formatJSONPretty
	lists := []jsonList{
		listOf("owners", rep.LockOwners),
		listOf("findings", rep.Findings),
		listOf("tasks", rep.Tasks),
		listOf("ignored", rep.Ignored),
	}
	head := *rep
	head.LockOwners, head.Findings, head.Tasks, head.Ignored = nil, nil, nil, nil
	var rest []byte
	var err error
	if pretty {
		rest, err = json.MarshalIndent(&head, "", jsonIndent)
	} else {
		rest, err = json.Marshal(&head)
	}
	if err != nil {
		return fmt.Errorf("encode report: %w", err)
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	for _, l := range lists {
		// A quote inside a JSON string is escaped, so `"key":null` can only
		// be the report's own member; the lists come in this order.
		placeholder := []byte(`"` + l.key + `":null`)
		if pretty {
			placeholder = []byte(`"` + l.key + `": null`)
		}
		before, after, found := bytes.Cut(rest, placeholder)
		if !found {
			return fmt.Errorf("encode report: no member %q", l.key)
		}
		bw.Write(before)
		bw.Write(placeholder[:len(placeholder)-len("null")])
		if err := l.write(bw, pretty); err != nil {
			return fmt.Errorf("encode report %s: %w", l.key, err)
		}
		rest = after
	}
	bw.Write(rest)
	bw.WriteByte('\n')
	return bw.Flush()
}

// jsonList is one list member of the report, written member by member.
type jsonList struct {
	key  string
	null bool
	n    int
	elem func(i int) any
}

func listOf[T any](key string, s []T) jsonList {
	return jsonList{key: key, null: s == nil, n: len(s), elem: func(i int) any { return &s[i] }}
}

// write prints the list as encoding/json does at the second level of an
// indented document (members on lines of their own, indented twice) or
// compactly.
func (l jsonList) write(w *bufio.Writer, pretty bool) error {
	switch {
	case l.null:
		_, err := w.WriteString("null")
		return err
	case l.n == 0:
		_, err := w.WriteString("[]")
		return err
	}
	const memberPrefix = jsonIndent + jsonIndent
	w.WriteByte('[')
	for i := range l.n {
		var b []byte
		var err error
		if pretty {
			b, err = json.MarshalIndent(l.elem(i), memberPrefix, jsonIndent)
		} else {
			b, err = json.Marshal(l.elem(i))
		}
		if err != nil {
			return err
		}
		if i > 0 {
			w.WriteByte(',')
		}
		if pretty {
			w.WriteString("\n" + memberPrefix)
		}
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	if pretty {
		w.WriteString("\n" + jsonIndent)
	}
	_, err := w.WriteString("]")
	return err
}
