package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weftmcp/weft/client"
	"github.com/weftmcp/weft/exactjson"
)

// TestAdminMetrics: `weft serve --admin` serves the Prometheus metrics at
// /metrics behind the admin token, and they count the demo's requests and
// name the keyring's active key.
func TestAdminMetrics(t *testing.T) {
	dir := t.TempDir()
	keyring := filepath.Join(dir, "keyring.json")
	runWeft(t, "keys", "generate", "--id", "metrics-k1", "--keyring", keyring)
	addr, adminAddr := freeAddr(t), freeAddr(t)
	tokenFile := filepath.Join(dir, "admin.token")
	startServe(t, "--addr", addr, "--data", filepath.Join(dir, "data"), "--keyring", keyring,
		"--admin", adminAddr, "--admin-token-file", tokenFile)
	waitPort(t, addr)
	waitPort(t, adminAddr)

	ctx := context.Background()
	caps := exactjson.Object(exactjson.Field("elicitation", exactjson.Object()))
	c := client.New(client.NewHTTPTransport("http://"+addr+"/mcp", nil), &client.Options{Capabilities: caps})
	defer c.Close()
	if _, err := c.Discover(ctx); err != nil {
		t.Fatal(err)
	}
	call(t, ctx, c, exactjson.Object(exactjson.Field("name", exactjson.String("catalog.continue"))))

	scrape := func(token string) (int, string) {
		req, _ := http.NewRequest(http.MethodGet, "http://"+adminAddr+"/metrics", nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	if status, _ := scrape(""); status != http.StatusUnauthorized {
		t.Errorf("/metrics without the admin token: HTTP %d", status)
	}
	tb, err := os.ReadFile(tokenFile)
	if err != nil {
		t.Fatal(err)
	}
	token := strings.TrimSpace(string(tb))
	var body string
	deadline := time.Now().Add(30 * time.Second)
	for {
		var status int
		if status, body = scrape(token); status != 200 {
			t.Fatalf("/metrics: HTTP %d %s", status, body)
		}
		if strings.Contains(body, `weft_requests_total{method="tools/call",name="catalog.continue",outcome="input_required"} 1`) ||
			time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, want := range []string{
		`weft_requests_total{method="server/discover",name="",outcome="complete"} 1`,
		`weft_requests_total{method="tools/call",name="catalog.continue",outcome="input_required"} 1`,
		`weft_state_seals_total{result="ok"} 1`,
		`weft_keyring_info{active_key_id="metrics-k1",ephemeral="false",fingerprint="v1:weft-request-state-v1:`,
		`weft_tasks{status="working"} 0`,
		`go_goroutines `,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if t.Failed() {
		t.Logf("/metrics:\n%s", body)
	}
}
