package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weftmcp/weft/client"
	"github.com/weftmcp/weft/exactjson"
)

// TestStaticTokens: with --tokens a request without a valid token gets 401
// with a challenge naming the protected resource metadata, which is served;
// tokens map to principals and partitions, and sealed state does not cross
// partitions.
func TestStaticTokens(t *testing.T) {
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens.json")
	body := `{"tokens":[
		{"token":"alice-token-0123456789","principal":"alice","partition":"tenant-a"},
		{"token":"bob-token-0123456789ab","principal":"bob","partition":"tenant-b"}]}`
	if err := os.WriteFile(tokens, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	startServe(t, "--addr", addr, "--data", filepath.Join(dir, "data"), "--tokens", tokens,
		"--authorization-server", "https://login.example.com")
	waitPort(t, addr)
	url := "http://" + addr + "/mcp"
	ctx := context.Background()

	anon := client.New(client.NewHTTPTransport(url, nil), nil)
	defer anon.Close()
	_, err := anon.Discover(ctx)
	var he *client.HTTPError
	var re *client.RPCError
	switch {
	case errors.As(err, &he):
		if he.StatusCode != http.StatusUnauthorized {
			t.Fatalf("without a token: %v", err)
		}
	case errors.As(err, &re):
		if re.HTTPStatus != http.StatusUnauthorized {
			t.Fatalf("without a token: %v", err)
		}
	default:
		t.Fatalf("without a token: %v", err)
	}
	// The raw challenge and the metadata document.
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "server/discover")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	ch := resp.Header.Get("WWW-Authenticate")
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(ch, `resource_metadata="http://`+addr+`/.well-known/oauth-protected-resource/mcp"`) {
		t.Fatalf("challenge %d %q", resp.StatusCode, ch)
	}
	mresp, err := http.Get("http://" + addr + "/.well-known/oauth-protected-resource/mcp")
	if err != nil {
		t.Fatal(err)
	}
	mb, _ := io.ReadAll(mresp.Body)
	mresp.Body.Close()
	var meta struct {
		Resource             string   `json:"resource"`
		AuthorizationServers []string `json:"authorization_servers"`
	}
	if err := json.Unmarshal(mb, &meta); err != nil || meta.Resource != url || len(meta.AuthorizationServers) != 1 {
		t.Fatalf("metadata %s: %v", mb, err)
	}

	caps := exactjson.Object(exactjson.Field("elicitation", exactjson.Object()))
	alice := client.New(client.NewHTTPTransport(url, &client.HTTPOptions{BearerToken: "alice-token-0123456789"}), &client.Options{Capabilities: caps})
	defer alice.Close()
	bob := client.New(client.NewHTTPTransport(url, &client.HTTPOptions{BearerToken: "bob-token-0123456789ab"}), &client.Options{Capabilities: caps})
	defer bob.Close()
	first, err := alice.Call(ctx, "tools/call", exactjson.Object(exactjson.Field("name", exactjson.String("catalog.continue"))))
	if err != nil {
		t.Fatal(err)
	}
	state, _ := first.Get("requestState")
	retry := exactjson.Object(exactjson.Field("name", exactjson.String("catalog.continue")), exactjson.Field("requestState", state),
		exactjson.Field("inputResponses", exactjson.Object(exactjson.Field("approval", exactjson.Object(exactjson.Field("action", exactjson.String("accept")))))))
	if _, err := bob.Discover(ctx); err != nil { // move bob's ids past alice's emitting id
		t.Fatal(err)
	}
	if _, err := bob.Call(ctx, "tools/call", retry); err == nil || !strings.Contains(err.Error(), "Invalid request state") {
		t.Fatalf("alice's state replayed by bob: %v", err)
	}
	if _, err := alice.Call(ctx, "tools/call", retry); err != nil {
		t.Fatalf("alice's retry: %v", err)
	}
}
