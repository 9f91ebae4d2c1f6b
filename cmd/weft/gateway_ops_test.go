package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/weftmcp/weft/client"
)

// TestGatewayOperations: `weft gateway` with the operator's flags. The
// admin listener serves the Prometheus metrics behind its token, counting
// the calls per upstream, and the upstreams' status; every request is
// traced to an OTLP/HTTP collector, the upstream named on the span;
// /healthz and /readyz answer; SIGHUP is logged and changes nothing; on
// SIGTERM /readyz reports 503 for --drain-delay while calls are still
// served, then the process exits cleanly.
func TestGatewayOperations(t *testing.T) {
	dir := t.TempDir()
	var mu sync.Mutex
	var spans [][]byte
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if r.URL.Path == "/v1/traces" {
			mu.Lock()
			spans = append(spans, b)
			mu.Unlock()
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer collector.Close()
	cfg := filepath.Join(dir, "gateway.yaml")
	doc := "upstreams:\n  - name: demo\n    command: " + strconv.Quote(weftBin) + "\n    args: [serve, --stdio, --data, ./demo-data]\n" +
		"    dir: .\n    prefix: demo.\n"
	if err := os.WriteFile(cfg, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	addr, adminAddr := freeAddr(t), freeAddr(t)
	tokenFile := filepath.Join(dir, "admin.token")
	cmd := exec.Command(weftBin, "gateway", "--config", cfg, "--addr", addr, "--data", filepath.Join(dir, "gw"),
		"--admin", adminAddr, "--admin-token-file", tokenFile, "--otlp-endpoint", collector.URL+"/v1/traces", "--drain-delay", "2s")
	// A file, not a pipe: the upstream inherits it, and Wait would wait
	// for it to close.
	logFile := filepath.Join(dir, "gateway.log")
	lf, err := os.Create(logFile)
	if err != nil {
		t.Fatal(err)
	}
	defer lf.Close()
	cmd.Stderr = lf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var waitErr error
	exited := make(chan struct{})
	go func() { waitErr = cmd.Wait(); close(exited) }()
	defer func() {
		if t.Failed() {
			b, _ := os.ReadFile(logFile)
			t.Logf("weft gateway:\n%s", b)
		}
		select {
		case <-exited:
		default:
			_ = cmd.Process.Kill()
			<-exited
		}
	}()
	waitPort(t, addr)
	waitPort(t, adminAddr)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := client.New(client.NewHTTPTransport("http://"+addr+"/mcp", nil), nil)
	defer c.Close()
	if _, err := c.CallTool(ctx, "demo.counter.show", map[string]any{"start": 2}); err != nil {
		t.Fatal(err)
	}

	get := func(url, token string) (int, string) {
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	if status, _ := get("http://"+adminAddr+"/metrics", ""); status != http.StatusUnauthorized {
		t.Errorf("/metrics without the admin token: HTTP %d", status)
	}
	tb, err := os.ReadFile(tokenFile)
	if err != nil {
		t.Fatal(err)
	}
	token := strings.TrimSpace(string(tb))
	var body string
	want := `weft_gateway_calls_total{method="tools/call",outcome="complete",upstream="demo"} 1`
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		var status int
		if status, body = get("http://"+adminAddr+"/metrics", token); status != 200 {
			t.Fatalf("/metrics: HTTP %d %s", status, body)
		}
		if strings.Contains(body, want) || time.Now().After(deadline) {
			break
		}
	}
	for _, w := range []string{want, `weft_requests_total{method="tools/call",name="demo.counter.show",outcome="complete"} 1`,
		`weft_gateway_call_duration_seconds_count{method="tools/call",outcome="complete",upstream="demo"} 1`} {
		if !strings.Contains(body, w) {
			t.Errorf("/metrics lacks %q", w)
		}
	}

	// The span of the call reached the collector with its upstream (the
	// exporter batches: wait for it). Protobuf keeps strings as bytes.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		mu.Lock()
		all := bytes.Join(spans, nil)
		mu.Unlock()
		if bytes.Contains(all, []byte("weft.gateway.upstream")) && bytes.Contains(all, []byte("demo.counter.show")) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no span naming the upstream and the tool reached the collector (%d bytes)", len(all))
		}
	}

	// The admin status: the upstream connected, with its tools.
	status, sb := get("http://"+adminAddr+"/admin/status", token)
	var st struct {
		Upstreams []struct {
			Name, Transport, State, Protocol string
			Tools                            int
		}
		ParkedCalls int
		Keyring     string
	}
	if err := json.Unmarshal([]byte(sb), &st); status != 200 || err != nil || len(st.Upstreams) != 1 || st.Upstreams[0].Name != "demo" ||
		st.Upstreams[0].State != "connected" || st.Upstreams[0].Transport != "stdio" || st.Upstreams[0].Tools == 0 || !strings.HasPrefix(st.Keyring, "v1:") {
		t.Fatalf("/admin/status: %d %s", status, sb)
	}
	if status, _ := get("http://"+adminAddr+"/admin/status", ""); status != http.StatusUnauthorized {
		t.Errorf("/admin/status without the token: %d", status)
	}

	for _, p := range []string{"/healthz", "/readyz"} {
		if status, b := get("http://"+addr+p, ""); status != 200 {
			t.Fatalf("%s: %d %s", p, status, b)
		}
	}
	// SIGHUP is logged, and the gateway goes on.
	if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if b, _ := os.ReadFile(logFile); strings.Contains(string(b), "does not reload its configuration") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("SIGHUP was not logged")
		}
	}
	if _, err := c.CallTool(ctx, "demo.counter.show", map[string]any{"start": 4}); err != nil {
		t.Fatalf("a call after SIGHUP: %v", err)
	}

	// Drain: not ready, still serving; then gone.
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if status, _ := get("http://"+addr+"/readyz", ""); status == http.StatusServiceUnavailable {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("/readyz did not report draining")
		}
	}
	if _, err := c.CallTool(ctx, "demo.counter.show", map[string]any{"start": 3}); err != nil {
		t.Fatalf("a call while draining: %v", err)
	}
	select {
	case <-exited:
		if waitErr != nil {
			t.Fatalf("weft gateway exited with %v", waitErr)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("weft gateway did not exit after draining")
	}
}
