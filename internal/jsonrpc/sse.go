package jsonrpc

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"
)

// ErrEventTooLarge is returned by [SSEReader.Next] for an event whose data
// exceeds the reader's bound.
var ErrEventTooLarge = errors.New("SSE event too large")

// SSEReader reads the events of a text/event-stream: data lines joined by
// newlines, the event type; comments are skipped, and so are events
// without data. The id and retry fields are kept for resumption
// ([SSEReader.LastEventID], [SSEReader.Retry]).
type SSEReader struct {
	br     *bufio.Reader
	max    int
	data   []byte
	lastID string
	retry  time.Duration
}

// LastEventID returns the last event ID the stream set (the value to
// send as Last-Event-ID when resuming it).
func (r *SSEReader) LastEventID() string { return r.lastID }

// Retry returns the reconnection time the stream last set (0: none).
func (r *SSEReader) Retry() time.Duration { return r.retry }

// NewSSEReader reads events of at most max bytes of data from r.
func NewSSEReader(r io.Reader, max int) *SSEReader {
	return &SSEReader{br: bufio.NewReaderSize(r, 32<<10), max: max}
}

// Next returns the next event. The data is valid until the next call. At
// the end of the stream an event not terminated by a blank line is
// returned with terminated false and a nil error; then io.EOF.
func (r *SSEReader) Next() (event string, data []byte, terminated bool, err error) {
	r.data = r.data[:0]
	hasData := false
	for {
		line, err := ReadLine(r.br, r.max)
		if err != nil && !(errors.Is(err, io.EOF) && len(line) > 0) {
			if errors.Is(err, io.EOF) && hasData {
				return event, r.data, false, nil
			}
			return "", nil, false, err
		}
		switch {
		case len(line) == 0:
			if hasData {
				return event, r.data, true, nil
			}
			event = ""
		case line[0] == ':': // a comment (keep-alive)
		default:
			field, value := line, []byte(nil)
			if i := bytes.IndexByte(line, ':'); i >= 0 {
				field, value = line[:i], line[i+1:]
				if len(value) > 0 && value[0] == ' ' {
					value = value[1:]
				}
			}
			switch string(field) {
			case "data":
				if hasData {
					r.data = append(r.data, '\n')
				}
				if len(r.data)+len(value) > r.max {
					return "", nil, false, fmt.Errorf("%w: an event exceeds %d bytes", ErrEventTooLarge, r.max)
				}
				r.data = append(r.data, value...)
				hasData = true
			case "event":
				event = string(value)
			case "id":
				if bytes.IndexByte(value, 0) < 0 {
					r.lastID = string(value)
				}
			case "retry":
				if ms, err := strconv.ParseUint(string(value), 10, 31); err == nil {
					r.retry = time.Duration(ms) * time.Millisecond
				}
			}
		}
		if err != nil { // EOF after a last line without newline
			if hasData {
				return event, r.data, false, nil
			}
			return "", nil, false, io.EOF
		}
	}
}
