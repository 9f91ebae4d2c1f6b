package jsonrpc

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
)

func TestSSEReader(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		max     int
		want    []string // event|data|terminated
		wantErr error    // after the wanted events
	}{
		{"one event", "data: {}\n\n", 100, []string{"|{}|true"}, io.EOF},
		{"multi-line data, type, comments and other fields", ": hi\nevent: message\nid: 7\ndata: a\ndata:b\nretry: 5\n\n", 100,
			[]string{"message|a\nb|true"}, io.EOF},
		{"the type does not outlive its event", "event: x\ndata: 1\n\ndata: 2\n\n", 100, []string{"x|1|true", "|2|true"}, io.EOF},
		{"blank lines without data are skipped", "\n\nevent: x\n\ndata: 1\n\n", 100, []string{"|1|true"}, io.EOF},
		{"CRLF", "data: 1\r\n\r\n", 100, []string{"|1|true"}, io.EOF},
		{"unterminated last event", "data: 1\n\ndata: 2\n", 100, []string{"|1|true", "|2|false"}, io.EOF},
		{"unterminated last line", "data: 1", 100, []string{"|1|false"}, io.EOF},
		{"empty data counts", "data:\n\n", 100, []string{"||true"}, io.EOF},
		{"event over max", "data:12345\ndata:67890\n\n", 10, nil, ErrEventTooLarge},
		{"line over max", "data: " + strings.Repeat("x", 50) + "\n\n", 20, nil, ErrLineTooLong},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewSSEReader(strings.NewReader(tt.in), tt.max)
			var got []string
			var err error
			for range 10 {
				var ev string
				var data []byte
				var term bool
				ev, data, term, err = r.Next()
				if err != nil {
					break
				}
				got = append(got, fmt.Sprintf("%s|%s|%v", ev, data, term))
			}
			if strings.Join(got, " ; ") != strings.Join(tt.want, " ; ") {
				t.Errorf("events = %q, want %q", got, tt.want)
			}
			if !errors.Is(err, tt.wantErr) {
				t.Errorf("err = %v, want %v", err, tt.wantErr)
			}
		})
	}
}
