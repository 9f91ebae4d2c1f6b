package client

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/weftmcp/weft/exactjson"
)

func TestResultText(t *testing.T) {
	for _, tt := range []struct {
		name, result, want string
	}{
		{"no contents", `{"contents":[]}`, ""},
		{"text", `{"contents":[{"uri":"a","text":"one"}]}`, "one"},
		{"text and blob", `{"contents":[{"uri":"a","text":"one"},{"uri":"b","blob":"AAE="},{"uri":"c","text":""},{"uri":"d","text":"two"}]}`, "one\n\ntwo"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			v, err := exactjson.ParseString(tt.result, exactjson.Limits{})
			if err != nil {
				t.Fatal(err)
			}
			if got := parseResourceResult(v).Text(); got != tt.want {
				t.Errorf("Text() = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestHTTPOptionsHeaders: BearerToken and Header apply alone and together,
// Header last, and an error from Header fails the request.
func TestHTTPOptionsHeaders(t *testing.T) {
	tag := func(_ context.Context, h http.Header) error { h.Set("X-Trace", "t1"); return nil }
	overrides := func(_ context.Context, h http.Header) error { h.Set("Authorization", "Basic x"); return nil }
	for _, tt := range []struct {
		name             string
		opts             *HTTPOptions
		wantAuth, wantTr string
	}{
		{"none", nil, "", ""},
		{"bearer", &HTTPOptions{BearerToken: "tok"}, "Bearer tok", ""},
		{"header", &HTTPOptions{Header: tag}, "", "t1"},
		{"both", &HTTPOptions{BearerToken: "tok", Header: tag}, "Bearer tok", "t1"},
		{"header runs last", &HTTPOptions{BearerToken: "tok", Header: overrides}, "Basic x", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			tr := NewHTTPTransport("http://127.0.0.1/mcp", tt.opts)
			if tr.headerFunc != nil {
				if err := tr.headerFunc(context.Background(), h); err != nil {
					t.Fatal(err)
				}
			}
			if h.Get("Authorization") != tt.wantAuth || h.Get("X-Trace") != tt.wantTr {
				t.Errorf("headers %v", h)
			}
		})
	}
	fail := errors.New("no token")
	tr := NewHTTPTransport("http://127.0.0.1/mcp", &HTTPOptions{BearerToken: "tok", Header: func(context.Context, http.Header) error { return fail }})
	if err := tr.headerFunc(context.Background(), http.Header{}); !errors.Is(err, fail) {
		t.Errorf("Header's error: %v", err)
	}
}
