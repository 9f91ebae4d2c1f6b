package admin_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/weftmcp/weft/admin"
	"github.com/weftmcp/weft/internal/syncbuf"
	"github.com/weftmcp/weft/seal"
)

const testToken = "0123456789abcdef-admin-test-token"

// fixture is a manager holding k1 (active) and a keyring file holding k1
// to k5 (k1 active), plus "kx", which the manager holds with other bytes
// than the file (so that staging it conflicts).
type fixture struct {
	mgr      *seal.Manager
	fileKeys map[string]seal.Key
	secrets  [][]byte // every secret the test knows of, manager's and file's
	path     string
	log      *syncbuf.Buffer
	extraHit chan struct{}
	h        http.Handler
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{fileKeys: map[string]seal.Key{}, log: new(syncbuf.Buffer), extraHit: make(chan struct{}, 1000)}
	var ver []seal.Key
	for _, id := range []string{"k1", "k2", "k3", "k4", "k5", "kx"} {
		k := mustGenerate(t, id)
		f.fileKeys[id] = k
		f.secrets = append(f.secrets, k.Secret())
		if id != "k1" {
			ver = append(ver, k)
		}
	}
	f.path = filepath.Join(t.TempDir(), "keyring.json")
	if err := seal.WriteKeyringFile(f.path, mustKeyring(t, f.fileKeys["k1"], ver...)); err != nil {
		t.Fatal(err)
	}
	kxOther := mustGenerate(t, "kx")
	f.secrets = append(f.secrets, kxOther.Secret())
	f.mgr = seal.NewManager(mustKeyring(t, f.fileKeys["k1"], kxOther), nil)
	h, err := admin.Handler(admin.Config{
		Manager:     f.mgr,
		KeyringPath: f.path,
		Token:       testToken,
		Logger:      slog.New(slog.NewTextHandler(f.log, nil)),
		Extra: map[string]http.Handler{"GET /metrics": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			f.extraHit <- struct{}{}
			io.WriteString(w, "metrics\n")
		})},
	})
	if err != nil {
		t.Fatal(err)
	}
	f.h = h
	return f
}

func mustGenerate(t *testing.T, id string) seal.Key {
	t.Helper()
	k, err := seal.GenerateKey(id)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func mustKeyring(t *testing.T, active seal.Key, ver ...seal.Key) *seal.Keyring {
	t.Helper()
	r, err := seal.NewKeyring(active, ver...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// do serves one request on f.h from remote with the given Authorization
// header ("" for none).
func (f *fixture) do(method, path, body, remote, authz string) *httptest.ResponseRecorder {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	r := httptest.NewRequest(method, path, rd)
	r.RemoteAddr = remote
	r.Host = "127.0.0.1:9090" // what a client of a loopback listener sends
	if authz != "" {
		r.Header.Set("Authorization", authz)
	}
	w := httptest.NewRecorder()
	f.h.ServeHTTP(w, r)
	return w
}

// endpoints lists one request per route of the admin handler.
var endpoints = []struct{ method, path, body string }{
	{"GET", "/admin/keys", ""},
	{"POST", "/admin/keys/stage", `{"id":"k2"}`},
	{"POST", "/admin/keys/activate", `{"id":"k2"}`},
	{"POST", "/admin/keys/rotate", `{"id":"k3"}`},
	{"POST", "/admin/keys/remove", `{"id":"kx"}`},
	{"GET", "/metrics", ""},
}

func errorOf(t *testing.T, w *httptest.ResponseRecorder) string {
	t.Helper()
	if ct := w.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("error response Content-Type %q, want application/json", ct)
	}
	var e struct {
		Error string `json:"error"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil || e.Error == "" {
		t.Errorf("error body %q is not {\"error\": \"...\"} (%v)", w.Body, err)
	}
	return e.Error
}

func TestHandlerConfig(t *testing.T) {
	mgr := seal.NewEphemeralManager(nil)
	ok := http.NotFoundHandler()
	tests := []struct {
		name    string
		cfg     admin.Config
		wantErr string // "" for success
	}{
		{"valid", admin.Config{Manager: mgr, Token: testToken}, ""},
		{"valid extra", admin.Config{Manager: mgr, Token: testToken, Extra: map[string]http.Handler{"GET /metrics": ok}}, ""},
		{"no manager", admin.Config{Token: testToken}, "Manager is required"},
		{"short token", admin.Config{Manager: mgr, Token: strings.Repeat("x", admin.MinTokenLength-1)}, "at least 16 characters"},
		{"nil extra handler", admin.Config{Manager: mgr, Token: testToken, Extra: map[string]http.Handler{"GET /metrics": nil}}, "nil handler"},
		{"invalid extra pattern", admin.Config{Manager: mgr, Token: testToken, Extra: map[string]http.Handler{"GET": ok}}, `Extra["GET"]`},
		{"conflicting extra pattern", admin.Config{Manager: mgr, Token: testToken, Extra: map[string]http.Handler{"GET /admin/keys": ok}}, `Extra["GET /admin/keys"]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, err := admin.Handler(tt.cfg)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("Handler: %v", err)
			case tt.wantErr == "" && h == nil:
				t.Fatal("Handler returned a nil handler")
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("Handler error %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

// TestHandlerToken: without the exact token no endpoint answers or changes
// anything; with it, the scheme name is case-insensitive.
func TestHandlerToken(t *testing.T) {
	refused := []struct {
		name, authz, wantChallenge string
	}{
		{"no header", "", `Bearer realm="weft-admin"`},
		{"scheme only", "Bearer", `Bearer realm="weft-admin"`},
		{"basic scheme", "Basic " + base64.StdEncoding.EncodeToString([]byte("admin:"+testToken)), `Bearer realm="weft-admin"`},
		{"token without scheme", testToken, `Bearer realm="weft-admin"`},
		{"other scheme", "Token " + testToken, `Bearer realm="weft-admin"`},
		{"empty token", "Bearer ", `Bearer realm="weft-admin", error="invalid_token"`},
		{"wrong token", "Bearer " + strings.Repeat("z", len(testToken)), `Bearer realm="weft-admin", error="invalid_token"`},
		{"prefix of the token", "Bearer " + testToken[:len(testToken)-1], `Bearer realm="weft-admin", error="invalid_token"`},
		{"token with a suffix", "Bearer " + testToken + "x", `Bearer realm="weft-admin", error="invalid_token"`},
		{"token in other case", "Bearer " + strings.ToUpper(testToken), `Bearer realm="weft-admin", error="invalid_token"`},
	}
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			before := f.mgr.Snapshot()
			for _, e := range endpoints {
				w := f.do(e.method, e.path, e.body, "127.0.0.1:5000", tt.authz)
				if w.Code != http.StatusUnauthorized {
					t.Errorf("%s %s: HTTP %d, want 401", e.method, e.path, w.Code)
				}
				if got := w.Header().Get("WWW-Authenticate"); got != tt.wantChallenge {
					t.Errorf("%s %s: WWW-Authenticate %q, want %q", e.method, e.path, got, tt.wantChallenge)
				}
				if got := w.Header().Get("Cache-Control"); got != "no-store" {
					t.Errorf("%s %s: Cache-Control %q, want no-store", e.method, e.path, got)
				}
				errorOf(t, w)
			}
			if after := f.mgr.Snapshot(); !snapshotsEqual(before, after) {
				t.Errorf("a refused request changed the keyring: %+v -> %+v", before, after)
			}
			if n := len(f.extraHit); n != 0 {
				t.Errorf("the extra handler ran %d times without the token", n)
			}
		})
	}
	accepted := []string{"Bearer " + testToken, "bearer " + testToken, "BEARER   " + testToken + "  "}
	for _, authz := range accepted {
		t.Run("accepted "+authz[:6], func(t *testing.T) {
			f := newFixture(t)
			for _, e := range endpoints {
				if w := f.do(e.method, e.path, e.body, "127.0.0.1:5000", authz); w.Code != http.StatusOK {
					t.Errorf("%s %s: HTTP %d %s, want 200", e.method, e.path, w.Code, w.Body)
				}
			}
		})
	}
}

func snapshotsEqual(a, b seal.Snapshot) bool {
	return a.ActiveID == b.ActiveID && slices.Equal(a.VerificationIDs, b.VerificationIDs) && a.Fingerprint == b.Fingerprint
}

// TestHandlerLoopbackOnly: a peer address other than a loopback IP is
// refused with 403 before the token is looked at.
func TestHandlerLoopbackOnly(t *testing.T) {
	tests := []struct {
		remote string
		want   int
	}{
		{"127.0.0.1:5000", http.StatusOK},
		{"127.3.4.5:5000", http.StatusOK},
		{"[::1]:5000", http.StatusOK},
		{"[::ffff:127.0.0.1]:5000", http.StatusOK},
		{"192.0.2.10:5000", http.StatusForbidden},
		{"10.0.0.1:5000", http.StatusForbidden},
		{"0.0.0.0:5000", http.StatusForbidden},
		{"[2001:db8::1]:5000", http.StatusForbidden},
		{"[::ffff:192.0.2.10]:5000", http.StatusForbidden},
		{"[fe80::1%eth0]:5000", http.StatusForbidden},
		{"localhost:5000", http.StatusForbidden}, // a name, not an address
		{"127.0.0.1", http.StatusForbidden},      // no port: not a peer address
		{"@", http.StatusForbidden},              // a Unix socket peer
		{"", http.StatusForbidden},
	}
	for _, tt := range tests {
		t.Run(tt.remote, func(t *testing.T) {
			f := newFixture(t)
			before := f.mgr.Snapshot()
			for _, e := range endpoints {
				w := f.do(e.method, e.path, e.body, tt.remote, "Bearer "+testToken)
				if w.Code != tt.want {
					t.Errorf("%s %s: HTTP %d, want %d", e.method, e.path, w.Code, tt.want)
				}
				if got := w.Header().Get("Cache-Control"); got != "no-store" {
					t.Errorf("%s %s: Cache-Control %q, want no-store", e.method, e.path, got)
				}
				if tt.want == http.StatusForbidden {
					if msg := errorOf(t, w); !strings.Contains(msg, "loopback") {
						t.Errorf("%s %s: error %q does not say why", e.method, e.path, msg)
					}
				}
			}
			if tt.want == http.StatusForbidden {
				if after := f.mgr.Snapshot(); !snapshotsEqual(before, after) {
					t.Errorf("a refused request changed the keyring: %+v -> %+v", before, after)
				}
				if n := len(f.extraHit); n != 0 {
					t.Errorf("the extra handler ran %d times for a remote peer", n)
				}
			}
		})
	}
}

// TestHandlerBadRequests: malformed bodies and unknown routes get a clear
// JSON error and change nothing.
func TestHandlerBadRequests(t *testing.T) {
	tests := []struct {
		name, method, path, body string
		want                     int
	}{
		{"no body", "POST", "/admin/keys/stage", "", http.StatusBadRequest},
		{"empty object", "POST", "/admin/keys/stage", `{}`, http.StatusBadRequest},
		{"empty id", "POST", "/admin/keys/activate", `{"id":""}`, http.StatusBadRequest},
		{"id not a string", "POST", "/admin/keys/activate", `{"id":2}`, http.StatusBadRequest},
		{"unknown member", "POST", "/admin/keys/stage", `{"id":"k2","secret":"AAAA"}`, http.StatusBadRequest},
		{"two objects", "POST", "/admin/keys/stage", `{"id":"k2"}{"id":"k3"}`, http.StatusBadRequest},
		{"trailing garbage", "POST", "/admin/keys/stage", `{"id":"k2"} x`, http.StatusBadRequest},
		{"not JSON", "POST", "/admin/keys/stage", `id=k2`, http.StatusBadRequest},
		{"oversized body", "POST", "/admin/keys/stage", `{"id":"` + strings.Repeat("k", 5000) + `"}`, http.StatusBadRequest},
		{"unknown operation", "POST", "/admin/keys/export", `{"id":"k1"}`, http.StatusNotFound},
		{"unknown operation, bad body", "POST", "/admin/keys/export", `x`, http.StatusNotFound},
		{"stage a key not in the file", "POST", "/admin/keys/stage", `{"id":"k9"}`, http.StatusNotFound},
		{"rotate to a key not in the file", "POST", "/admin/keys/rotate", `{"id":"k9"}`, http.StatusNotFound},
		{"activate an unstaged key", "POST", "/admin/keys/activate", `{"id":"k2"}`, http.StatusNotFound},
		{"stage a conflicting key", "POST", "/admin/keys/stage", `{"id":"kx"}`, http.StatusConflict},
		{"rotate to a conflicting key", "POST", "/admin/keys/rotate", `{"id":"kx"}`, http.StatusConflict},
		{"remove the active key", "POST", "/admin/keys/remove", `{"id":"k1"}`, http.StatusBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			before := f.mgr.Snapshot()
			w := f.do(tt.method, tt.path, tt.body, "127.0.0.1:5000", "Bearer "+testToken)
			if w.Code != tt.want {
				t.Fatalf("HTTP %d %s, want %d", w.Code, w.Body, tt.want)
			}
			errorOf(t, w)
			if after := f.mgr.Snapshot(); !snapshotsEqual(before, after) {
				t.Errorf("a refused request changed the keyring: %+v -> %+v", before, after)
			}
		})
	}
}

// TestHandlerKeyringFileErrors: a server without a readable keyring file
// answers stage with 500 and a reason, not with "not found".
func TestHandlerKeyringFileErrors(t *testing.T) {
	dir := t.TempDir()
	k := mustGenerate(t, "k1")
	open := filepath.Join(dir, "open.json")
	if err := seal.WriteKeyringFile(open, mustKeyring(t, k)); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o644); err != nil {
		t.Fatal(err)
	}
	corrupt := filepath.Join(dir, "corrupt.json")
	padded := base64.URLEncoding.EncodeToString(k.Secret()) // padding is not canonical
	if err := os.WriteFile(corrupt, []byte(`{"version":1,"active":"k1","keys":[{"id":"k1","secret":"`+padded+`"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct{ name, path, want string }{
		{"no keyring file", "", "no keyring file"},
		{"missing file", filepath.Join(dir, "missing.json"), "no such file"},
		{"file readable by others", open, "chmod 600"},
		{"corrupt file", corrupt, "canonical unpadded base64url"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, err := admin.Handler(admin.Config{Manager: seal.NewEphemeralManager(nil), KeyringPath: tt.path, Token: testToken,
				Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			for _, op := range []string{"stage", "rotate"} {
				r := httptest.NewRequest("POST", "/admin/keys/"+op, strings.NewReader(`{"id":"k1"}`))
				r.RemoteAddr = "127.0.0.1:5000"
				r.Host = "127.0.0.1:9090"
				r.Header.Set("Authorization", "Bearer "+testToken)
				w := httptest.NewRecorder()
				h.ServeHTTP(w, r)
				if w.Code != http.StatusInternalServerError {
					t.Errorf("%s: HTTP %d %s, want 500", op, w.Code, w.Body)
				}
				if msg := errorOf(t, w); !strings.Contains(msg, tt.want) {
					t.Errorf("%s: error %q, want one containing %q", op, msg, tt.want)
				}
				if leak := findSecret(w.Body.String(), [][]byte{k.Secret()}); leak != "" {
					t.Errorf("%s: the response holds the key in %s form", op, leak)
				}
			}
		})
	}
}

// secretForms returns the encodings of secret (and of its first 15 bytes,
// to catch a truncated leak) that a response must never contain.
func secretForms(secret []byte) map[string]string {
	forms := map[string]string{}
	for _, part := range []struct {
		name string
		b    []byte
	}{{"", secret}, {"prefix ", secret[:15]}} {
		forms[part.name+"raw"] = string(part.b)
		forms[part.name+"hex"] = hex.EncodeToString(part.b)
		forms[part.name+"HEX"] = strings.ToUpper(hex.EncodeToString(part.b))
		forms[part.name+"base64"] = base64.StdEncoding.EncodeToString(part.b)
		forms[part.name+"raw base64"] = base64.RawStdEncoding.EncodeToString(part.b)
		forms[part.name+"base64url"] = base64.URLEncoding.EncodeToString(part.b)
		forms[part.name+"raw base64url"] = base64.RawURLEncoding.EncodeToString(part.b)
	}
	return forms
}

// findSecret returns the name of the first form of any secret found in s.
func findSecret(s string, secrets [][]byte) string {
	for i, sec := range secrets {
		for name, form := range secretForms(sec) {
			if strings.Contains(s, form) {
				return fmt.Sprintf("%s (secret %d)", name, i)
			}
		}
	}
	return ""
}

// dump renders a response's status line, headers and body.
func dump(w *httptest.ResponseRecorder) string {
	var b strings.Builder
	fmt.Fprintf(&b, "HTTP %d\n", w.Code)
	w.Header().Write(&b)
	b.WriteString("\n")
	b.Write(w.Body.Bytes())
	return b.String()
}

// TestNoKeyBytesInResponses drives every endpoint through its success and
// failure paths and scans every response (status, headers, body) and the
// audit log for any key's bytes in raw, hex or base64 form.
func TestNoKeyBytesInResponses(t *testing.T) {
	f := newFixture(t)
	res, err := f.mgr.Reserve() // holds k1 so that removing it after rotation is refused as in use
	if err != nil {
		t.Fatal(err)
	}
	token := "Bearer " + testToken
	steps := []struct {
		method, path, body, remote, authz string
		want                              int
	}{
		{"GET", "/admin/keys", "", "127.0.0.1:1", token, 200},
		{"GET", "/admin/keys", "", "127.0.0.1:1", "", 401},
		{"GET", "/admin/keys", "", "127.0.0.1:1", "Bearer wrong-token-wrong-token", 401},
		{"GET", "/admin/keys", "", "192.0.2.1:1", token, 403},
		{"POST", "/admin/keys/stage", `{"id":"k2"}`, "127.0.0.1:1", token, 200},
		{"POST", "/admin/keys/stage", `{"id":"k2"}`, "127.0.0.1:1", token, 200}, // idempotent
		{"POST", "/admin/keys/stage", `{"id":"kx"}`, "127.0.0.1:1", token, 409},
		{"POST", "/admin/keys/stage", `{"id":"k9"}`, "127.0.0.1:1", token, 404},
		{"POST", "/admin/keys/stage", `{"id":"k2","secret":"x"}`, "127.0.0.1:1", token, 400},
		{"POST", "/admin/keys/activate", `{"id":"k3"}`, "127.0.0.1:1", token, 404},
		{"POST", "/admin/keys/activate", `{"id":"k2"}`, "127.0.0.1:1", token, 200},
		{"POST", "/admin/keys/rotate", `{"id":"k3"}`, "127.0.0.1:1", token, 200},
		{"POST", "/admin/keys/rotate", `{"id":"k3"}`, "127.0.0.1:1", token, 200}, // retry-safe
		{"POST", "/admin/keys/rotate", `{"id":"kx"}`, "127.0.0.1:1", token, 409},
		{"POST", "/admin/keys/remove", `{"id":"k3"}`, "127.0.0.1:1", token, 400}, // active
		{"POST", "/admin/keys/remove", `{"id":"k1"}`, "127.0.0.1:1", token, 409}, // reserved
		{"POST", "/admin/keys/remove", `{"id":"k2"}`, "127.0.0.1:1", token, 200},
		{"POST", "/admin/keys/remove", `{"id":"k2"}`, "127.0.0.1:1", token, 200}, // removed false
		{"POST", "/admin/keys/export", `{"id":"k1"}`, "127.0.0.1:1", token, 404},
		{"GET", "/admin/keys/stage", "", "127.0.0.1:1", token, 405},
		{"GET", "/admin/keyring", "", "127.0.0.1:1", token, 404},
		{"GET", "/metrics", "", "127.0.0.1:1", token, 200},
	}
	for _, s := range steps {
		w := f.do(s.method, s.path, s.body, s.remote, s.authz)
		if w.Code != s.want {
			t.Errorf("%s %s %s: HTTP %d %s, want %d", s.method, s.path, s.body, w.Code, w.Body, s.want)
		}
		if leak := findSecret(dump(w), f.secrets); leak != "" {
			t.Errorf("%s %s %s: the response holds a key in %s form:\n%s", s.method, s.path, s.body, leak, dump(w))
		}
	}
	res.Release()
	if w := f.do("POST", "/admin/keys/remove", `{"id":"k1"}`, "127.0.0.1:1", token); w.Code != 200 || !strings.Contains(w.Body.String(), `"removed":true`) {
		t.Errorf("remove k1 after its reservation ended: HTTP %d %s", w.Code, w.Body)
	}
	if leak := findSecret(f.log.String(), f.secrets); leak != "" {
		t.Errorf("the audit log holds a key in %s form:\n%s", leak, f.log)
	}
	// The audit log has one line per change and one per refusal, with the
	// operation and key id.
	for _, want := range []string{`msg="admin: key operation" op=stage id=k2`, `msg="admin: key operation refused" op=stage id=kx`,
		`msg="admin: key operation" op=remove id=k1`, `msg="admin: key operation refused" op=remove id=k1`} {
		if !strings.Contains(f.log.String(), want) {
			t.Errorf("the audit log lacks %q:\n%s", want, f.log)
		}
	}
}

// TestClientOverLoopback runs the rotation runbook with Client against the
// handler on a real loopback listener (IPv4, and IPv6 where available).
func TestClientOverLoopback(t *testing.T) {
	for _, network := range []struct{ name, addr string }{{"ipv4", "127.0.0.1:0"}, {"ipv6", "[::1]:0"}} {
		t.Run(network.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", network.addr)
			if err != nil {
				t.Skipf("no %s loopback: %v", network.name, err)
			}
			f := newFixture(t)
			srv := httptest.NewUnstartedServer(f.h)
			srv.Listener.Close()
			srv.Listener = ln
			srv.Start()
			defer srv.Close()
			ctx := context.Background()
			c := &admin.Client{URL: srv.URL + "/", Token: testToken, HTTP: srv.Client()}

			check := func(step string, st admin.Status, err error, active string, ver ...string) {
				t.Helper()
				if err != nil {
					t.Fatalf("%s: %v", step, err)
				}
				if st.ActiveID != active || !slices.Equal(st.VerificationIDs, ver) {
					t.Fatalf("%s: active %q verification %q, want %q %q", step, st.ActiveID, st.VerificationIDs, active, ver)
				}
				want := f.mgr.Snapshot().Fingerprint
				if got := st.Fingerprint; got.Version != want.Version || got.Profile != want.Profile || got.Value != want.Value || got.String() != want.String() {
					t.Fatalf("%s: fingerprint %s, want %s", step, got, want)
				}
			}
			st, err := c.Status(ctx)
			check("status", st, err, "k1", "kx")
			st, err = c.Stage(ctx, "k2")
			check("stage k2", st, err, "k1", "k2", "kx")
			st, err = c.Activate(ctx, "k2")
			check("activate k2", st, err, "k2", "k1", "kx")
			st, err = c.Rotate(ctx, "k3")
			check("rotate k3", st, err, "k3", "k1", "k2", "kx")
			st, err = c.Remove(ctx, "k1")
			check("remove k1", st, err, "k3", "k2", "kx")
			if st.Removed == nil || !*st.Removed {
				t.Fatalf("remove k1: removed %v, want true", st.Removed)
			}
			st, err = c.Remove(ctx, "k1")
			check("remove k1 again", st, err, "k3", "k2", "kx")
			if st.Removed == nil || *st.Removed {
				t.Fatalf("remove k1 again: removed %v, want false", st.Removed)
			}

			errTests := []struct {
				name string
				call func() (admin.Status, error)
				want string
			}{
				{"remove the active key", func() (admin.Status, error) { return c.Remove(ctx, "k3") }, "HTTP 400"},
				{"stage a key not in the file", func() (admin.Status, error) { return c.Stage(ctx, "k9") }, "HTTP 404"},
				{"stage a conflicting key", func() (admin.Status, error) { return c.Stage(ctx, "kx") }, "HTTP 409"},
				{"wrong token", func() (admin.Status, error) {
					return (&admin.Client{URL: srv.URL, Token: "not-the-admin-token", HTTP: srv.Client()}).Status(ctx)
				}, "invalid admin token (HTTP 401)"},
				{"no token", func() (admin.Status, error) {
					return (&admin.Client{URL: srv.URL, HTTP: srv.Client()}).Status(ctx)
				}, "(HTTP 401)"},
			}
			for _, tt := range errTests {
				if _, err := tt.call(); err == nil || !strings.Contains(err.Error(), tt.want) {
					t.Errorf("%s: error %v, want one containing %q", tt.name, err, tt.want)
				}
			}
		})
	}
}

// nonLoopbackIP returns an address of this machine that is not a loopback
// address, or nil.
func nonLoopbackIP() net.IP {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil && !n.IP.IsLinkLocalUnicast() {
			return n.IP
		}
	}
	return nil
}

// TestNonLoopbackPeerOverTCP: a real connection from a non-loopback address
// of this machine is refused even with the right token.
func TestNonLoopbackPeerOverTCP(t *testing.T) {
	ip := nonLoopbackIP()
	if ip == nil {
		t.Skip("this machine has no non-loopback IPv4 address")
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(ip.String(), "0"))
	if err != nil {
		t.Skipf("cannot listen on %s: %v", ip, err)
	}
	f := newFixture(t)
	srv := httptest.NewUnstartedServer(f.h)
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	defer srv.Close()
	c := &admin.Client{URL: srv.URL, Token: testToken, HTTP: srv.Client()}
	before := f.mgr.Snapshot()
	if _, err := c.Stage(context.Background(), "k2"); err == nil || !strings.Contains(err.Error(), "loopback connections only (HTTP 403)") {
		t.Fatalf("stage from %s: error %v, want the loopback-only 403", ip, err)
	}
	if after := f.mgr.Snapshot(); !snapshotsEqual(before, after) {
		t.Errorf("a refused request changed the keyring: %+v -> %+v", before, after)
	}
}

// TestConcurrentKeyOps runs stage, activate, rotate, remove and status
// concurrently over loopback HTTP while other goroutines seal under
// reservations. Every answer must be one the operation allows, every
// status a consistent keyring, no reserved key may be removed, and the
// audit log must hold one line per answer. Run it with -race.
func TestConcurrentKeyOps(t *testing.T) {
	f := newFixture(t)
	srv := httptest.NewServer(f.h)
	defer srv.Close()
	ids := []string{"k1", "k2", "k3", "k4", "k5"}

	// consistent checks a status against the keys it names: the
	// fingerprint must be that of exactly this keyring.
	consistent := func(st admin.Status) error {
		if slices.Contains(st.VerificationIDs, st.ActiveID) {
			return fmt.Errorf("active %q is also a verification key", st.ActiveID)
		}
		if !slices.IsSorted(st.VerificationIDs) {
			return fmt.Errorf("verification ids %q are not sorted", st.VerificationIDs)
		}
		key := func(id string) (seal.Key, error) {
			if !slices.Contains(ids, id) {
				return seal.Key{}, fmt.Errorf("unexpected key id %q", id)
			}
			return f.fileKeys[id], nil
		}
		active, err := key(st.ActiveID)
		if err != nil {
			return err
		}
		var ver []seal.Key
		for _, id := range st.VerificationIDs {
			k, err := key(id)
			if err != nil {
				return err
			}
			ver = append(ver, k)
		}
		r, err := seal.NewKeyring(active, ver...)
		if err != nil {
			return err
		}
		if want := r.Fingerprint(); st.Fingerprint.String() != want.String() {
			return fmt.Errorf("fingerprint %s is not that of active %q verification %q (%s)", st.Fingerprint, st.ActiveID, st.VerificationIDs, want)
		}
		return nil
	}
	// Remove kx (held with bytes other than the file's) first, so that every
	// later status names only file keys and its fingerprint can be rebuilt.
	if w := f.do("POST", "/admin/keys/remove", `{"id":"kx"}`, "127.0.0.1:1", "Bearer "+testToken); w.Code != 200 {
		t.Fatalf("remove kx: HTTP %d %s", w.Code, w.Body)
	}

	allowed := map[string][]int{
		"stage":    {200},
		"rotate":   {200},
		"activate": {200, 404},
		"remove":   {200, 400, 409},
		"status":   {200},
	}
	ops := []string{"stage", "rotate", "activate", "remove", "status"}
	const workers, perWorker = 6, 60
	var (
		mu       sync.Mutex
		answered = map[int]int{}
		wg       sync.WaitGroup
		stop     = make(chan struct{})
	)
	for w := range workers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			for range perWorker {
				op, id := ops[rng.IntN(len(ops))], ids[rng.IntN(len(ids))]
				method, path, body := "POST", "/admin/keys/"+op, `{"id":"`+id+`"}`
				if op == "status" {
					method, path, body = "GET", "/admin/keys", ""
				}
				req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+testToken)
				resp, err := srv.Client().Do(req)
				if err != nil {
					t.Errorf("%s %s: %v", op, id, err)
					return
				}
				data, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if !slices.Contains(allowed[op], resp.StatusCode) {
					t.Errorf("%s %s: HTTP %d %s, want one of %v", op, id, resp.StatusCode, data, allowed[op])
				}
				if leak := findSecret(string(data), f.secrets); leak != "" {
					t.Errorf("%s %s: the response holds a key in %s form", op, id, leak)
				}
				if op != "status" {
					mu.Lock()
					answered[resp.StatusCode]++
					mu.Unlock()
				}
				if resp.StatusCode != 200 {
					continue
				}
				var st admin.Status
				if err := json.Unmarshal(data, &st); err != nil {
					t.Errorf("%s %s: %v in %s", op, id, err, data)
					continue
				}
				if err := consistent(st); err != nil {
					t.Errorf("%s %s: inconsistent status %s: %v", op, id, data, err)
				}
				if (op == "remove") != (st.Removed != nil) {
					t.Errorf("%s %s: removed field in %s", op, id, data)
				}
			}
		})
	}
	// Sealers: a reserved key must survive every concurrent remove, so state
	// sealed under it still opens before the reservation is released.
	var sealers sync.WaitGroup
	for s := range 2 {
		sealers.Go(func() {
			binding, pt := []byte("binding"), []byte(fmt.Sprintf("sealer %d", s))
			for {
				select {
				case <-stop:
					return
				default:
				}
				res, err := f.mgr.Reserve()
				if err != nil {
					t.Errorf("Reserve: %v", err)
					return
				}
				tok, err := res.Seal(binding, pt)
				if err != nil {
					t.Errorf("Seal: %v", err)
				}
				got, err := f.mgr.Open(context.Background(), tok, binding)
				if err != nil || !bytes.Equal(got, pt) {
					t.Errorf("state sealed under reserved key %q does not open while reserved: %v", res.KeyID(), err)
				}
				res.Release()
			}
		})
	}
	wg.Wait()
	close(stop)
	sealers.Wait()

	// The final status over HTTP is the manager's, and consistent.
	st, err := (&admin.Client{URL: srv.URL, Token: testToken, HTTP: srv.Client()}).Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := consistent(st); err != nil {
		t.Errorf("final status: %v", err)
	}
	if snap := f.mgr.Snapshot(); st.ActiveID != snap.ActiveID || !slices.Equal(st.VerificationIDs, snap.VerificationIDs) || st.Fingerprint.String() != snap.Fingerprint.String() {
		t.Errorf("final status %+v is not the manager's %+v", st, snap)
	}
	// One audit line per answered change: "key operation" for each 200,
	// "key operation refused" for each refusal (+1 for the kx removal).
	log := f.log.String()
	refused := strings.Count(log, `msg="admin: key operation refused"`)
	done := strings.Count(log, `msg="admin: key operation"`)
	wantRefused := answered[400] + answered[404] + answered[409]
	if refused != wantRefused || done != answered[200]+1 {
		t.Errorf("audit log: %d changes and %d refusals, want %d and %d", done, refused, answered[200]+1, wantRefused)
	}
	t.Logf("answers: %v", answered)
}

// TestHandlerHostAndOrigin: a page that rebinds its name to 127.0.0.1 still
// sends its own name in Host and its origin in Origin; the admin API
// refuses both (403, nothing changes) unless the operator listed them.
func TestHandlerHostAndOrigin(t *testing.T) {
	tests := []struct {
		name, host, origin string
		allowHosts         []string
		allowOrigins       []string
		want               int
	}{
		{"loopback address", "127.0.0.1:9090", "", nil, nil, http.StatusOK},
		{"localhost", "localhost:9090", "", nil, nil, http.StatusOK},
		{"IPv6 loopback", "[::1]:9090", "", nil, nil, http.StatusOK},
		{"loopback origin", "127.0.0.1:9090", "http://localhost:3000", nil, nil, http.StatusOK},
		{"rebound name", "attacker.example:9090", "", nil, nil, http.StatusForbidden},
		{"rebound name with its origin", "attacker.example:9090", "http://attacker.example:9090", nil, nil, http.StatusForbidden},
		{"foreign origin", "127.0.0.1:9090", "https://attacker.example", nil, nil, http.StatusForbidden},
		{"opaque origin", "127.0.0.1:9090", "null", nil, nil, http.StatusForbidden},
		{"listed host", "admin.internal:9090", "", []string{"admin.internal"}, nil, http.StatusOK},
		{"listed origin", "127.0.0.1:9090", "https://console.internal", nil, []string{"https://console.internal"}, http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			h, err := admin.Handler(admin.Config{Manager: f.mgr, KeyringPath: f.path, Token: testToken,
				Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), AllowedHosts: tt.allowHosts, AllowedOrigins: tt.allowOrigins})
			if err != nil {
				t.Fatal(err)
			}
			before := f.mgr.Snapshot()
			for _, e := range endpoints[:5] {
				var rd io.Reader
				if e.body != "" {
					rd = strings.NewReader(e.body)
				}
				r := httptest.NewRequest(e.method, e.path, rd)
				r.RemoteAddr, r.Host = "127.0.0.1:5000", tt.host
				r.Header.Set("Authorization", "Bearer "+testToken)
				if tt.origin != "" {
					r.Header.Set("Origin", tt.origin)
				}
				w := httptest.NewRecorder()
				h.ServeHTTP(w, r)
				if tt.want == http.StatusOK && w.Code == http.StatusForbidden || tt.want == http.StatusForbidden && w.Code != http.StatusForbidden {
					t.Errorf("%s %s: HTTP %d %s, want %d", e.method, e.path, w.Code, w.Body, tt.want)
				}
			}
			if tt.want == http.StatusForbidden {
				if after := f.mgr.Snapshot(); !snapshotsEqual(before, after) {
					t.Errorf("a refused request changed the keyring: %+v -> %+v", before, after)
				}
			}
		})
	}
}
