package jsonrpc

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
)

// What a server (or a gateway's upstream) writes is untrusted: the line
// and event readers are fuzzed against a naive model that splits the whole
// input at once, and with small bounds for their limits.

// modelLines splits in into lines as ReadLine does: at LF, one CR before
// it dropped; a last line without LF counts when it is not empty after
// that (a lone CR at the end of the input is no line).
func modelLines(in []byte) (lines [][]byte, lastTerminated bool) {
	parts := bytes.Split(in, []byte("\n"))
	for i, p := range parts {
		if i == len(parts)-1 {
			if p = bytes.TrimSuffix(p, []byte("\r")); len(p) > 0 {
				return append(lines, p), false
			}
			return lines, true
		}
		lines = append(lines, bytes.TrimSuffix(p, []byte("\r")))
	}
	return lines, true
}

// modelEvents is the SSE reader's contract over whole lines.
func modelEvents(in []byte) []string {
	lines, _ := modelLines(in)
	var out []string
	event, data, hasData := "", []byte(nil), false
	for _, line := range lines {
		switch {
		case len(line) == 0:
			if hasData {
				out = append(out, fmt.Sprintf("%s|%s|true", event, data))
			}
			event, data, hasData = "", nil, false
		case line[0] == ':':
		default:
			field, value, found := bytes.Cut(line, []byte(":"))
			if found {
				value = bytes.TrimPrefix(value, []byte(" "))
			}
			switch string(field) {
			case "data":
				if hasData {
					data = append(data, '\n')
				}
				data = append(data, value...)
				hasData = true
			case "event":
				event = string(value)
			}
		}
	}
	if hasData {
		out = append(out, fmt.Sprintf("%s|%s|false", event, data))
	}
	return out
}

func FuzzReadLine(f *testing.F) {
	for _, s := range []string{"", "a\n", "a\r\nb", "\r\r\n", strings.Repeat("x", 40) + "\n", "\n\n\nlast"} {
		f.Add([]byte(s), 16)
	}
	f.Fuzz(func(t *testing.T, in []byte, max int) {
		if max < 1 || max > 1<<16 {
			max = 16
		}
		// bufio's smallest buffer, so lines span several fragments.
		br := bufio.NewReaderSize(bytes.NewReader(in), 16)
		want, _ := modelLines(in)
		for i := 0; ; i++ {
			line, err := ReadLine(br, max)
			if errors.Is(err, ErrLineTooLong) {
				if i >= len(want) || len(want[i]) <= max {
					t.Fatalf("line %d: %v, model line %q (max %d)", i, err, want[min(i, len(want)-1)], max)
				}
				return
			}
			if err != nil && !errors.Is(err, io.EOF) {
				t.Fatalf("line %d: %v", i, err)
			}
			if errors.Is(err, io.EOF) && len(line) == 0 {
				if i != len(want) {
					t.Fatalf("EOF after %d lines, model has %d", i, len(want))
				}
				return
			}
			if i >= len(want) || !bytes.Equal(line, want[i]) {
				t.Fatalf("line %d = %q, model %q", i, line, want)
			}
			if len(line) > max {
				t.Fatalf("line %d has %d bytes, over max %d", i, len(line), max)
			}
			if errors.Is(err, io.EOF) {
				if i != len(want)-1 {
					t.Fatalf("EOF at line %d of %d", i, len(want))
				}
				return
			}
		}
	})
}

func FuzzSSEReader(f *testing.F) {
	for _, s := range []string{
		"data: {}\n\n",
		": hi\nevent: message\nid: 7\ndata: a\ndata:b\nretry: 5\n\n",
		"event: x\ndata: 1\n\ndata: 2\n\n",
		"data: 1\r\n\r\ndata: 2",
		"data:\n\nevent\ndata\n\n",
	} {
		f.Add([]byte(s), 8)
	}
	f.Fuzz(func(t *testing.T, in []byte, max int) {
		if max < 1 || max > 1<<16 {
			max = 8
		}
		// Unbounded: every event the model sees, in order, then io.EOF.
		want := modelEvents(in)
		r := NewSSEReader(bytes.NewReader(in), 1<<20)
		var got []string
		for {
			ev, data, term, err := r.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("Next: %v", err)
			}
			got = append(got, fmt.Sprintf("%s|%s|%v", ev, data, term))
			if len(got) > len(want) {
				break
			}
		}
		if strings.Join(got, "\x00") != strings.Join(want, "\x00") {
			t.Fatalf("events %q, model %q", got, want)
		}
		// Bounded: the same events until the first one over max, which
		// is refused with a bound error; none carries more than max bytes.
		r = NewSSEReader(bytes.NewReader(in), max)
		for i := 0; ; i++ {
			ev, data, term, err := r.Next()
			if errors.Is(err, io.EOF) {
				if i != len(want) {
					t.Fatalf("bounded reader ended after %d events, model has %d", i, len(want))
				}
				return
			}
			if errors.Is(err, ErrLineTooLong) || errors.Is(err, ErrEventTooLarge) {
				return
			}
			if err != nil {
				t.Fatalf("bounded Next: %v", err)
			}
			if len(data) > max {
				t.Fatalf("event of %d bytes passed max %d", len(data), max)
			}
			if i >= len(want) || fmt.Sprintf("%s|%s|%v", ev, data, term) != want[i] {
				t.Fatalf("bounded event %d = %q|%q|%v, model %q", i, ev, data, term, want)
			}
		}
	})
}
