package jsonrpc

import (
	"bufio"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/weftmcp/weft/exactjson"
)

func TestReadLine(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		max     int
		want    []string
		wantErr error // of the read after the wanted lines
	}{
		{"LF and CRLF", "ab\ncd\r\nef", 10, []string{"ab", "cd", "ef"}, io.EOF},
		{"exactly max with CRLF", "abcd\r\n", 4, []string{"abcd"}, io.EOF},
		{"over max", "abcde\n", 4, nil, ErrLineTooLong},
		{"over max by a CR-less byte", "abcde\r\n", 4, nil, ErrLineTooLong},
		{"over max across buffer fills", strings.Repeat("x", 100) + "\n", 50, nil, ErrLineTooLong},
		{"long line within max", strings.Repeat("x", 100) + "\n", 100, []string{strings.Repeat("x", 100)}, io.EOF},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			br := bufio.NewReaderSize(strings.NewReader(tt.in), 16)
			var got []string
			var err error
			for {
				var line []byte
				line, err = ReadLine(br, tt.max)
				if err != nil && (len(line) == 0 || !errors.Is(err, io.EOF)) {
					break
				}
				got = append(got, string(line))
				if err != nil {
					break
				}
			}
			if strings.Join(got, "|") != strings.Join(tt.want, "|") {
				t.Errorf("lines = %q, want %q", got, tt.want)
			}
			if !errors.Is(err, tt.wantErr) {
				t.Errorf("err = %v, want %v", err, tt.wantErr)
			}
		})
	}
}

func TestIDKey(t *testing.T) {
	tests := []struct {
		v    exactjson.Value
		want string
	}{
		{exactjson.Int(5), "5"},
		{exactjson.String("5"), `"5"`},
		{exactjson.Int(-1), "-1"},
		{mustParse(t, "5.0"), "5"},
		{mustParse(t, "5E0"), "5"},
		{mustParse(t, "1.50"), IDKey(mustParse(t, "1.5"))}, // one id
		{exactjson.String("a\"b"), `"a\"b"`},
		{exactjson.Null(), ""},
		{exactjson.Bool(true), ""},
		{exactjson.Object(), ""},
	}
	for _, tt := range tests {
		if got := IDKey(tt.v); got != tt.want {
			t.Errorf("IDKey(%s) = %q, want %q", tt.v.String(), got, tt.want)
		}
	}
}

func TestCalls(t *testing.T) {
	type call struct{ n int }
	a, b := &call{1}, &call{2}
	var cs Calls[*call]
	if !cs.Add("1", "t1", a) || !cs.Add("2", "", b) {
		t.Fatal("Add of new ids failed")
	}
	if cs.Add("1", "", b) {
		t.Fatal("Add of an id in flight succeeded")
	}
	if c, _ := cs.ByToken("t1"); c != a {
		t.Fatalf("ByToken(t1) = %v, want a", c)
	}
	if c, ok := cs.Take("1"); !ok || c != a {
		t.Fatalf("Take(1) = %v, %v", c, ok)
	}
	if _, ok := cs.ByToken("t1"); ok {
		t.Fatal("Take left the call's progress token")
	}
	if _, ok := cs.Take("1"); ok {
		t.Fatal("a second Take of the same id found a call")
	}
	cs.Remove("2", "", a) // not b's owner: nothing happens
	if c, _ := cs.ByID("2"); c != b || cs.Len() != 1 {
		t.Fatalf("Remove by another call unregistered b (len %d)", cs.Len())
	}
	cs.Remove("2", "", b)
	if cs.Len() != 0 {
		t.Fatalf("len = %d after removing every call", cs.Len())
	}
	for range cs.All() {
		t.Fatal("All yielded a call of an empty table")
	}
}

func TestEncodeResponses(t *testing.T) {
	data := exactjson.Object(exactjson.Field("why", exactjson.String("x")))
	tests := []struct {
		name string
		enc  func() ([]byte, error)
		want string
	}{
		{"result", func() ([]byte, error) {
			return EncodeResult(exactjson.String("a"), exactjson.Object(exactjson.Field("ok", exactjson.Bool(true))))
		}, `{"jsonrpc":"2.0","id":"a","result":{"ok":true}}`},
		{"result not an object", func() ([]byte, error) { return EncodeResult(exactjson.Int(3), exactjson.Value{}) },
			`{"jsonrpc":"2.0","id":3,"result":{}}`},
		{"error", func() ([]byte, error) { return EncodeError(exactjson.Int(7), -32601, "no", exactjson.Value{}) },
			`{"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"no"}}`},
		{"error with data", func() ([]byte, error) { return EncodeError(exactjson.Int(7), -32603, "bad", data) },
			`{"jsonrpc":"2.0","id":7,"error":{"code":-32603,"message":"bad","data":{"why":"x"}}}`},
		{"error to an unread id", func() ([]byte, error) { return EncodeError(exactjson.Null(), -32700, "Parse error", exactjson.Value{}) },
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`},
		{"error to an id that is no id", func() ([]byte, error) { return EncodeError(exactjson.Bool(true), -32600, "x", exactjson.Value{}) },
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"x"}}`},
		{"message escaped", func() ([]byte, error) { return EncodeError(exactjson.Int(1), 1000, "a \"quote\"\n", exactjson.Value{}) },
			`{"jsonrpc":"2.0","id":1,"error":{"code":1000,"message":"a \"quote\"\n"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := tt.enc()
			if err != nil || string(b) != tt.want {
				t.Errorf("got %s, %v; want %s", b, err, tt.want)
			}
		})
	}
}

func mustParse(t *testing.T, s string) exactjson.Value {
	t.Helper()
	v, err := exactjson.ParseString(s, exactjson.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	return v
}
