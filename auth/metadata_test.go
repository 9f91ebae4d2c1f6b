package auth

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
)

func validMeta() *ResourceMetadata {
	return &ResourceMetadata{
		Resource:             testResource,
		AuthorizationServers: []string{testIssuer},
		ScopesSupported:      []string{"mcp:read", "mcp:write"},
		ResourceName:         "Example MCP server",
	}
}

func TestMetadataValidate(t *testing.T) {
	if err := validMeta().Validate(); err != nil {
		t.Fatalf("valid metadata: %v", err)
	}
	for _, ok := range []string{
		"https://mcp.example.com",
		"https://mcp.example.com:8443",
		"https://mcp.example.com/server/mcp",
		"http://127.0.0.1:8080/mcp",
		"http://localhost/mcp",
		"http://[::1]:9000",
	} {
		m := validMeta()
		m.Resource = ok
		if err := m.Validate(); err != nil {
			t.Errorf("resource %q: %v", ok, err)
		}
	}
	cases := []struct {
		name string
		edit func(*ResourceMetadata)
		want string
	}{
		{"no resource", func(m *ResourceMetadata) { m.Resource = "" }, "resource"},
		{"no scheme", func(m *ResourceMetadata) { m.Resource = "mcp.example.com" }, "absolute URL"},
		{"fragment", func(m *ResourceMetadata) { m.Resource = "https://mcp.example.com#fragment" }, "fragment"},
		{"empty fragment", func(m *ResourceMetadata) { m.Resource = "https://mcp.example.com/mcp#" }, "fragment"},
		{"query", func(m *ResourceMetadata) { m.Resource = "https://mcp.example.com/mcp?x=1" }, "query"},
		{"user info", func(m *ResourceMetadata) { m.Resource = "https://u:p@mcp.example.com/mcp" }, "user info"},
		{"upper-case host", func(m *ResourceMetadata) { m.Resource = "https://MCP.example.com/mcp" }, "lower case"},
		{"plain http", func(m *ResourceMetadata) { m.Resource = "http://mcp.example.com/mcp" }, "loopback"},
		{"ftp", func(m *ResourceMetadata) { m.Resource = "ftp://mcp.example.com" }, "not https"},
		{"no authorization server", func(m *ResourceMetadata) { m.AuthorizationServers = nil }, "at least one authorization server"},
		{"bad authorization server", func(m *ResourceMetadata) { m.AuthorizationServers = []string{"auth.example.com"} }, "authorization_servers[0]"},
		{"http authorization server", func(m *ResourceMetadata) { m.AuthorizationServers = []string{"http://auth.example.com"} }, "loopback"},
		{"duplicate authorization server", func(m *ResourceMetadata) { m.AuthorizationServers = []string{testIssuer, testIssuer} }, "twice"},
		{"offline_access", func(m *ResourceMetadata) { m.ScopesSupported = []string{"mcp:read", "offline_access"} }, "offline_access"},
		{"scope with space", func(m *ResourceMetadata) { m.ScopesSupported = []string{"a b"} }, "not a valid scope"},
		{"duplicate scope", func(m *ResourceMetadata) { m.ScopesSupported = []string{"a", "a"} }, "twice"},
		{"query bearer method", func(m *ResourceMetadata) { m.BearerMethodsSupported = []string{"query"} }, "query string"},
		{"body bearer method", func(m *ResourceMetadata) { m.BearerMethodsSupported = []string{"header", "body"} }, "body"},
		{"relative documentation", func(m *ResourceMetadata) { m.ResourceDocumentation = "/docs" }, "resource_documentation"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := validMeta()
			tc.edit(m)
			err := m.Validate()
			if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate = %v, want ErrConfig mentioning %q", err, tc.want)
			}
		})
	}
	var nilMeta *ResourceMetadata
	if err := nilMeta.Validate(); err == nil {
		t.Error("nil metadata validated")
	}
}

func TestWellKnownPaths(t *testing.T) {
	cases := []struct {
		resource string
		url      string
		paths    []string
	}{
		{"https://mcp.example.com/mcp", "https://mcp.example.com/.well-known/oauth-protected-resource/mcp",
			[]string{"/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"}},
		{"https://mcp.example.com/public/mcp", "https://mcp.example.com/.well-known/oauth-protected-resource/public/mcp",
			[]string{"/.well-known/oauth-protected-resource/public/mcp", "/.well-known/oauth-protected-resource"}},
		{"https://mcp.example.com", "https://mcp.example.com/.well-known/oauth-protected-resource",
			[]string{"/.well-known/oauth-protected-resource"}},
		{"https://mcp.example.com/", "https://mcp.example.com/.well-known/oauth-protected-resource",
			[]string{"/.well-known/oauth-protected-resource"}},
		{"http://127.0.0.1:8080/mcp", "http://127.0.0.1:8080/.well-known/oauth-protected-resource/mcp",
			[]string{"/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"}},
	}
	for _, tc := range cases {
		m := validMeta()
		m.Resource = tc.resource
		if got := m.MetadataURL(); got != tc.url {
			t.Errorf("%s: MetadataURL = %q, want %q", tc.resource, got, tc.url)
		}
		if got := m.WellKnownPaths(); !reflect.DeepEqual(got, tc.paths) {
			t.Errorf("%s: WellKnownPaths = %q, want %q", tc.resource, got, tc.paths)
		}
	}
	bad := &ResourceMetadata{Resource: "nope"}
	if bad.MetadataURL() != "" || bad.WellKnownPaths() != nil {
		t.Error("invalid resource produced paths")
	}
}

func TestMetadataHandler(t *testing.T) {
	m := validMeta()
	h, err := m.Handler()
	if err != nil {
		t.Fatal(err)
	}
	// The handler serves a snapshot.
	m.ResourceName = "changed"

	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/.well-known/oauth-protected-resource/mcp", nil))
	if rec.Code != 200 {
		t.Fatalf("GET status %d", rec.Code)
	}
	hd := rec.Header()
	if hd.Get("Content-Type") != "application/json" {
		t.Errorf("Content-Type = %q", hd.Get("Content-Type"))
	}
	if hd.Get("Cache-Control") != "public, max-age=3600" || hd.Get("ETag") == "" {
		t.Errorf("caching headers: %v", hd)
	}
	if hd.Get("Access-Control-Allow-Origin") != "*" {
		t.Errorf("no CORS header")
	}
	var doc map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"resource":                 testResource,
		"authorization_servers":    []any{testIssuer},
		"scopes_supported":         []any{"mcp:read", "mcp:write"},
		"bearer_methods_supported": []any{"header"},
		"resource_name":            "Example MCP server",
	}
	if !reflect.DeepEqual(doc, want) {
		t.Errorf("document = %v\nwant       %v", doc, want)
	}

	// Conditional GET.
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	req.Header.Set("If-None-Match", `"other", `+hd.Get("ETag"))
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusNotModified || rec.Body.Len() != 0 {
		t.Errorf("If-None-Match: status %d, body %q", rec.Code, rec.Body.String())
	}
	// HEAD.
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodHead, "/", nil))
	if rec.Code != 200 || rec.Body.Len() != 0 || rec.Header().Get("Content-Length") == "" {
		t.Errorf("HEAD: status %d, body %d bytes", rec.Code, rec.Body.Len())
	}
	// Preflight.
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodOptions, "/", nil))
	if rec.Code != http.StatusNoContent || !strings.Contains(rec.Header().Get("Access-Control-Allow-Methods"), "GET") {
		t.Errorf("OPTIONS: status %d, %v", rec.Code, rec.Header())
	}
	// Other methods.
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/", strings.NewReader("{}")))
	if rec.Code != http.StatusMethodNotAllowed || rec.Header().Get("Allow") == "" {
		t.Errorf("POST: status %d", rec.Code)
	}

	bad := validMeta()
	bad.AuthorizationServers = nil
	if _, err := bad.Handler(); err == nil {
		t.Error("Handler accepted invalid metadata")
	}
}

func TestChallengeValue(t *testing.T) {
	cases := []struct {
		name string
		c    Challenge
		want string
	}{
		{"bare", Challenge{}, "Bearer"},
		{"401 no token", Challenge{ResourceMetadata: "https://x/.well-known/oauth-protected-resource", Scopes: []string{"a", "b:c"}},
			`Bearer resource_metadata="https://x/.well-known/oauth-protected-resource", scope="a b:c"`},
		{"401 invalid", Challenge{ResourceMetadata: "https://x/m", Error: ErrorInvalidToken, ErrorDescription: "expired"},
			`Bearer resource_metadata="https://x/m", error="invalid_token", error_description="expired"`},
		{"403", Challenge{ResourceMetadata: "https://x/m", Scopes: []string{"w"}, Error: ErrorInsufficientScope, ErrorDescription: "more"},
			`Bearer error="insufficient_scope", scope="w", resource_metadata="https://x/m", error_description="more"`},
		{"escaping", Challenge{Realm: `a"b\c`, ErrorDescription: "tab\there"},
			`Bearer realm="a\"b\\c", error_description="tab` + "\t" + `here"`},
	}
	for _, tc := range cases {
		got, err := tc.c.Value()
		if err != nil || got != tc.want {
			t.Errorf("%s: Value = %q, %v\nwant           %q", tc.name, got, err, tc.want)
		}
	}
	bad := []Challenge{
		{ErrorDescription: "line\r\nInjected: header"},
		{ErrorDescription: "line\nbreak"},
		{Realm: "nul\x00"},
		{ErrorDescription: "caf\u00e9"},
		{Scopes: []string{"a b"}},
		{Scopes: []string{`quo"te`}},
		{Scopes: []string{""}},
		{Error: "bad code"},
		{ResourceMetadata: "https://x/\r\n"},
	}
	for _, c := range bad {
		if v, err := c.Value(); err == nil {
			t.Errorf("Value(%+v) = %q, want error", c, v)
		}
	}
}

func TestRejectionBuilders(t *testing.T) {
	m := validMeta()
	u := m.MetadataURL()
	ae := m.MissingToken(nil)
	if ae.Status != 401 || ae.Challenge != `Bearer resource_metadata="`+u+`", scope="mcp:read mcp:write"` {
		t.Errorf("MissingToken = %+v", ae)
	}
	ae = m.InvalidToken([]string{"x"}, "bad\r\nline")
	if ae.Status != 401 || ae.Challenge != `Bearer resource_metadata="`+u+`", scope="x", error="invalid_token"` {
		t.Errorf("InvalidToken with a bad description = %+v (the description must be dropped)", ae)
	}
	ae = m.InsufficientScope([]string{"ok", "not ok"}, "d")
	if ae.Status != 403 || ae.Challenge != `Bearer error="insufficient_scope", resource_metadata="`+u+`"` {
		t.Errorf("InsufficientScope with a bad scope = %+v", ae)
	}
	var none *ResourceMetadata
	if ae := none.MissingToken(nil); ae.Challenge != "Bearer" || ae.Status != 401 {
		t.Errorf("nil metadata MissingToken = %+v", ae)
	}
}
