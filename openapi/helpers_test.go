package openapi_test

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/weftmcp/weft"
	"github.com/weftmcp/weft/client"
	"github.com/weftmcp/weft/exactjson"
	"github.com/weftmcp/weft/openapi"
	"github.com/weftmcp/weft/seal"
	"github.com/weftmcp/weft/wefttest"
)

var quiet = slog.New(slog.DiscardHandler)

// seen is what the echo upstream received, exactly as it came off the wire.
type seen struct {
	Method      string            `json:"method"`
	Path        string            `json:"path"`  // the raw request path, still escaped
	Query       string            `json:"query"` // the raw query
	Headers     map[string]string `json:"headers"`
	Cookie      string            `json:"cookie"`
	ContentType string            `json:"contentType"`
	Body        string            `json:"body"`
	BodyHex     string            `json:"bodyHex"`
}

// echoUpstream is a loopback HTTP server that answers every request with
// the request it saw, as JSON.
func echoUpstream(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		path, query, _ := strings.Cut(r.RequestURI, "?")
		s := seen{Method: r.Method, Path: path, Query: query, Headers: map[string]string{}, Cookie: r.Header.Get("Cookie"),
			ContentType: r.Header.Get("Content-Type"), Body: string(b), BodyHex: hex.EncodeToString(b)}
		for k, v := range r.Header {
			if strings.HasPrefix(k, "X-") || k == "Authorization" || k == "Accept" {
				s.Headers[k] = strings.Join(v, "|")
			}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(s)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// newServer maps doc with opts, registers it on a weft server with a
// keyring (for the confirmation state) and returns an in-memory MCP client.
func newServer(t *testing.T, doc string, opts openapi.Options, copts *wefttest.Options) (*openapi.API, *weft.Server, *client.Client) {
	t.Helper()
	api, err := openapi.New([]byte(doc), &opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	s, err := weft.NewServer(weft.Implementation{Name: "openapi-test", Version: "1"}, &weft.Options{Protector: protector(t), Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if err := api.Register(s); err != nil {
		t.Fatalf("Register: %v", err)
	}
	return api, s, wefttest.NewClient(t, s, copts)
}

func protector(t *testing.T) seal.Protector {
	t.Helper()
	key, err := seal.GenerateKey("test-key")
	if err != nil {
		t.Fatal(err)
	}
	ring, err := seal.NewKeyring(key)
	if err != nil {
		t.Fatal(err)
	}
	return seal.NewManager(ring, nil)
}

// call calls a tool whose upstream is the echo server and returns what the
// upstream saw.
func call(t *testing.T, c *client.Client, tool, args string) (seen, *client.ToolResult) {
	t.Helper()
	res := callRaw(t, c, tool, args)
	var s seen
	if !res.IsError {
		if err := json.Unmarshal([]byte(res.Text()), &s); err != nil {
			t.Fatalf("%s: upstream answer %q: %v", tool, res.Text(), err)
		}
	}
	return s, res
}

// callRaw calls a tool and returns its result.
func callRaw(t *testing.T, c *client.Client, tool, args string) *client.ToolResult {
	t.Helper()
	a, err := exactjson.Parse([]byte(args), exactjson.Limits{})
	if err != nil {
		t.Fatalf("args %s: %v", args, err)
	}
	res, err := c.CallTool(context.Background(), tool, a)
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	return res
}
