package gateway_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	weft "github.com/weftmcp/weft"
	"github.com/weftmcp/weft/auth"
	"github.com/weftmcp/weft/client"
	"github.com/weftmcp/weft/elicit"
	"github.com/weftmcp/weft/exactjson"
	"github.com/weftmcp/weft/gateway"
	"github.com/weftmcp/weft/internal/syncbuf"
)

// auditLines decodes the audit records written so far.
func auditLines(t *testing.T, b *syncbuf.Buffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(b.String()))
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("audit line %q: %v", sc.Text(), err)
		}
		out = append(out, m)
	}
	return out
}

// startPolicyGateway runs a gateway in front of the fake upstream
// (prefix fake_) with cfg's policy, limits and audit, admitting callers
// with adm.
func startPolicyGateway(t *testing.T, cfg *gateway.Config, adm weft.Admission, audit *syncbuf.Buffer) *instance {
	t.Helper()
	up, _ := fakeUpstream(t, "fake")
	up.Prefix = "fake_"
	cfg.Upstreams = []gateway.UpstreamConfig{up}
	if cfg.Audit == nil {
		cfg.Audit = &gateway.AuditConfig{File: "-", Arguments: true}
	}
	srv, err := weft.NewServer(weft.Implementation{Name: "policy-test", Version: "1"}, &weft.Options{Protector: testKeyring(t),
		Legacy: weft.LegacyOptions{InMemorySessions: true}, Admission: adm, URLElicitation: elicit.URLPolicy{AllowedOrigins: []string{"https://example.com"}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	gw, err := gateway.New(ctx, srv, cfg, &gateway.Options{Audit: audit})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := gw.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return &instance{gw: gw, srv: srv, url: serveHTTP(t, srv)}
}

func toolNames(t *testing.T, c *client.Client) []string {
	t.Helper()
	res, err := c.Call(context.Background(), "tools/list", exactjson.Object())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	tools, _ := res.Get("tools")
	for _, tl := range tools.Elements() {
		names = append(names, str(tl, "name"))
	}
	return names
}

func rpcError(t *testing.T, err error) *client.RPCError {
	t.Helper()
	var re *client.RPCError
	if !errors.As(err, &re) {
		t.Fatalf("want a JSON-RPC error, got %v", err)
	}
	return re
}

// TestPolicyScopes: a tool a rule gives a scope is listed for, and called
// by, only the tokens with that scope; another token gets it hidden, and
// its call a 403 insufficient_scope challenge naming the scope (static
// tokens, as `weft gateway --tokens` admits them).
func TestPolicyScopes(t *testing.T) {
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens.json")
	if err := os.WriteFile(tokens, []byte(`{"tokens":[
		{"token":"alice-token-0123456789","principal":"alice","partition":"alice","scopes":["mcp","admin"]},
		{"token":"bob-token-0123456789","principal":"bob","partition":"bob","scopes":["mcp"]}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	st, err := auth.LoadStaticTokens(tokens)
	if err != nil {
		t.Fatal(err)
	}
	meta := &auth.ResourceMetadata{Resource: "http://127.0.0.1/mcp", AuthorizationServers: []string{"https://auth.example.com"}}
	audit := &syncbuf.Buffer{}
	// The refusals at admission reach the audit log through RecordRefusal.
	var gwp atomic.Pointer[gateway.Gateway]
	adm := st.Admission(meta)
	audited := func(ctx context.Context, r *weft.AdmissionRequest) (weft.Identity, error) {
		id, err := adm(ctx, r)
		if g := gwp.Load(); g != nil && err != nil {
			g.RecordRefusal(ctx, r, err)
		}
		return id, err
	}
	in := startPolicyGateway(t, &gateway.Config{Policy: []gateway.PolicyRule{{Items: []string{"fake_crash", "fake_hang"}, Scopes: []string{"admin"}}}},
		audited, audit)
	gwp.Store(in.gw)
	alice := callerClient(t, in, "alice-token-0123456789")
	bob := callerClient(t, in, "bob-token-0123456789")
	if n := toolNames(t, alice); !slices.Contains(n, "fake_crash") || !slices.Contains(n, "fake_echo") {
		t.Fatalf("alice's tools: %v", n)
	}
	if n := toolNames(t, bob); slices.Contains(n, "fake_crash") || slices.Contains(n, "fake_hang") || !slices.Contains(n, "fake_echo") {
		t.Fatalf("bob's tools: %v", n)
	}
	_, err = callTool(context.Background(), bob, "fake_crash", exactjson.Object())
	re := rpcError(t, err)
	if ch := re.Header.Get("WWW-Authenticate"); re.HTTPStatus != 403 || !strings.Contains(ch, `error="insufficient_scope"`) || !strings.Contains(ch, `scope="admin"`) {
		t.Fatalf("bob's call: %d %q", re.HTTPStatus, ch)
	}
	if _, err := callTool(context.Background(), bob, "fake_echo", exactjson.Object()); err != nil {
		t.Fatalf("bob's echo: %v", err)
	}
	lines := auditLines(t, audit)
	if len(lines) != 2 || lines[0]["name"] != "fake_crash" || lines[0]["outcome"] != "refused" || lines[0]["status"] != float64(403) ||
		lines[0]["refusedBy"] != "admission" || lines[0]["upstream"] != "fake" || lines[1]["principal"] != "bob" || lines[1]["outcome"] != "complete" {
		t.Fatalf("audit: %v", lines)
	}
}

// claimsAdmission admits "Bearer alice" (groups eng) and "Bearer bob"
// (groups sales) with their claims, as a JWT validator would.
func claimsAdmission(_ context.Context, r *weft.AdmissionRequest) (weft.Identity, error) {
	groups := map[string]string{"alice": `["eng"]`, "bob": `["sales"]`}[r.BearerToken]
	if groups == "" {
		return weft.Identity{}, &weft.AdmissionError{Status: 401, Message: "who?"}
	}
	return weft.Identity{Principal: r.BearerToken, Partition: r.BearerToken, Scopes: []string{"mcp"},
		Data: &auth.Claims{Subject: r.BearerToken, Raw: map[string]json.RawMessage{"groups": json.RawMessage(groups)}}}, nil
}

// TestPolicyCallersArgumentsQuotasAudit: a claims rule hides a tool from
// the other group (listed and called as unknown), an argument rule refuses
// a value, a quota per caller runs out for one caller without touching the
// other's, with 429 and Retry-After; the audit log records every call,
// refusals with what refused them, arguments as configured.
func TestPolicyCallersArgumentsQuotasAudit(t *testing.T) {
	audit := &syncbuf.Buffer{}
	cfg := &gateway.Config{
		Policy: []gateway.PolicyRule{
			{Upstream: "fake", Items: []string{"fake_sample"}, Claims: map[string][]string{"groups": {"eng", "ops"}}},
			{Items: []string{"fake_echo"}, DenyArguments: map[string][]string{"path": {"/etc/*"}}},
		},
		Limits: []gateway.LimitRule{{Name: "echoes", Items: []string{"fake_echo"}, Calls: 3, Per: gateway.Duration(time.Hour)}},
	}
	in := startPolicyGateway(t, cfg, claimsAdmission, audit)
	alice, bob := callerClient(t, in, "alice"), callerClient(t, in, "bob")
	ctx := context.Background()

	if n := toolNames(t, alice); !slices.Contains(n, "fake_sample") {
		t.Fatalf("alice's tools: %v", n)
	}
	if n := toolNames(t, bob); slices.Contains(n, "fake_sample") || !slices.Contains(n, "fake_echo") {
		t.Fatalf("bob's tools: %v", n)
	}
	_, err := callTool(ctx, bob, "fake_sample", exactjson.Object())
	if re := rpcError(t, err); re.Code != int(weft.CodeInvalidParams) || !strings.Contains(re.Message, "Unknown tool") {
		t.Fatalf("bob's sample: %+v", re)
	}

	_, err = callTool(ctx, alice, "fake_echo", exactjson.Object(exactjson.Field("path", exactjson.String("/etc/shadow"))))
	if re := rpcError(t, err); re.Code != int(weft.CodeInvalidParams) || !strings.Contains(re.Message, `"path"`) {
		t.Fatalf("denied argument: %+v", re)
	}
	// The refused call counted no quota: three calls remain.
	for i := range 3 {
		if _, err := callTool(ctx, alice, "fake_echo", exactjson.Object(exactjson.Field("path", exactjson.String("/tmp/x")))); err != nil {
			t.Fatalf("alice's echo %d: %v", i+1, err)
		}
	}
	_, err = callTool(ctx, alice, "fake_echo", exactjson.Object())
	re := rpcError(t, err)
	if re.Code != int(weft.CodeRateLimited) || re.HTTPStatus != 429 || re.Header.Get("Retry-After") == "" {
		t.Fatalf("alice over quota: %+v", re)
	}
	if _, err := callTool(ctx, bob, "fake_echo", exactjson.Object()); err != nil {
		t.Fatalf("bob's quota was touched: %v", err)
	}

	type rec struct{ principal, name, outcome, refusedBy string }
	var got []rec
	for _, l := range auditLines(t, audit) {
		if l["upstream"] != "fake" || l["method"] != "tools/call" {
			t.Fatalf("audit line without upstream or method: %v", l)
		}
		if _, ok := l["durationMs"].(float64); !ok {
			t.Fatalf("audit line without duration: %v", l)
		}
		rb, _ := l["refusedBy"].(string)
		got = append(got, rec{l["principal"].(string), l["name"].(string), l["outcome"].(string), rb})
	}
	want := []rec{
		{"bob", "fake_sample", "error", "policy"},
		{"alice", "fake_echo", "error", "policy"},
		{"alice", "fake_echo", "complete", ""},
		{"alice", "fake_echo", "complete", ""},
		{"alice", "fake_echo", "complete", ""},
		{"alice", "fake_echo", "error", "quota:echoes"},
		{"bob", "fake_echo", "complete", ""},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("audit:\n got %v\nwant %v", got, want)
	}
	if l := auditLines(t, audit)[2]; l["arguments"] == nil {
		t.Fatalf("arguments not recorded: %v", l)
	}
}

// TestAuditWithoutArguments: arguments stay out of the audit log unless
// configured.
func TestAuditWithoutArguments(t *testing.T) {
	audit := &syncbuf.Buffer{}
	in := startPolicyGateway(t, &gateway.Config{Audit: &gateway.AuditConfig{File: "-"}}, tokenAdmission, audit)
	if _, err := callTool(context.Background(), callerClient(t, in, "carol"), "fake_echo", exactjson.Object(exactjson.Field("secret", exactjson.String("s3cr3t")))); err != nil {
		t.Fatal(err)
	}
	lines := auditLines(t, audit)
	if len(lines) != 1 || lines[0]["principal"] != "carol" || lines[0]["arguments"] != nil || strings.Contains(audit.String(), "s3cr3t") {
		t.Fatalf("audit: %s", audit.String())
	}
}

func TestPolicyConfigErrors(t *testing.T) {
	base := `{"upstreams":[{"name":"a","command":"x"}],`
	tests := []struct{ doc, want string }{
		{`"policy":[{"items":["x"]}]}`, "no condition"},
		{`"policy":[{"items":["["],"scopes":["a"]}]}`, "pattern"},
		{`"limits":[{"name":"q","calls":0}]}`, "calls = 0"},
		{`"limits":[{"name":"q","calls":1},{"name":"q","calls":2}]}`, "used twice"},
		{`"limits":[{"name":"bad name","calls":1}]}`, "name"},
		{`"audit":{}}`, "audit.file"},
		{`"auth":{}}`, "exactly one"},
		{`"auth":{"tokensFile":"t","jwt":{"issuer":"https://x","jwksUrl":"https://x/j"}}}`, "exactly one"},
		{`"auth":{"jwt":{"issuer":"https://x"}}}`, "jwksUrl"},
		{`"auth":{"tokensFile":"t","partitionClaim":"tenant"}}`, "partitionClaim"},
		{`"auth":{"authorizationServer":{"provider":{"issuer":"https://idp"}}}}`, "clientId"},
		{`"auth":{"authorizationServer":{"provider":{"issuer":"https://idp","clientId":"c","clientSecret":"s","clientSecretFile":"f"}}}}`, "not both"},
		{`"auth":{"tokensFile":"t","resource":"ftp://x"}}`, "resource"},
	}
	for _, tt := range tests {
		_, err := gateway.ParseConfig([]byte(base+tt.doc), "json")
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want %q", tt.doc, err, tt.want)
		}
	}
}

// TestProviderSecret: a secret file is read as it is (a "$" in it stays),
// the inline secret expands ${VAR}.
func TestProviderSecret(t *testing.T) {
	t.Setenv("WEFT_TEST_IDP_SECRET", "from-env")
	file := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(file, []byte("s3$cret$HOME\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		p    gateway.ProviderConfig
		want string
	}{
		{gateway.ProviderConfig{ClientSecretFile: file}, "s3$cret$HOME"},
		{gateway.ProviderConfig{ClientSecret: "${WEFT_TEST_IDP_SECRET}"}, "from-env"},
	} {
		got, err := tc.p.Secret()
		if err != nil || got != tc.want {
			t.Errorf("%+v: %q %v, want %q", tc.p, got, err, tc.want)
		}
	}
	if _, err := (gateway.ProviderConfig{ClientSecretFile: file + ".missing"}).Secret(); err == nil {
		t.Error("a missing secret file gave no error")
	}
}
