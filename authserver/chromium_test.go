package authserver

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// chromium returns the path of a headless-capable Chromium (CHROMIUM, then
// PATH: Debian's package "chromium"), or fails in CI and skips elsewhere.
func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("CHROMIUM"); p != "" {
		return p
	}
	for _, n := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("chromium is required in CI (apt-get install chromium)")
	}
	t.Skip("chromium not found (apt-get install chromium)")
	return ""
}

// TestConsentPageInChromium: a real browser follows the whole redirect
// chain (this server, Hydra's login and consent app, the callback) with
// its own cookies and renders the consent page: the DOM has the client's
// name, the redirect host, the loopback warning and the CSRF-protected
// form. With WEFT_UPDATE_SCREENSHOT=1 the screenshot replaces
// docs/authorization-consent.png.
func TestConsentPageInChromium(t *testing.T) {
	bin := chromium(t)
	e := newEnv(t, envOpts{})
	run := func(args ...string) []byte {
		t.Helper()
		_, challenge := pkce()
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		base := []string{"--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions",
			"--user-data-dir=" + t.TempDir(), "--window-size=820,900"}
		cmd := exec.CommandContext(ctx, bin, append(append(base, args...), e.authorizeURL(e.clientID, e.redirect, challenge, "chromium", nil))...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("chromium: %v\n%s", err, stderr.String())
		}
		return out
	}
	dom := string(run("--dump-dom"))
	for _, want := range []string{"Test MCP Client", "wants to access your account", "127.0.0.1:9", "on your own computer",
		`name="csrf"`, `name="request"`, `value="approve"`, "mcp:read"} {
		if !strings.Contains(dom, want) {
			t.Errorf("the rendered consent page lacks %q:\n%s", want, dom)
		}
	}
	shot := filepath.Join(t.TempDir(), "consent.png")
	run("--screenshot=" + shot)
	png, err := os.ReadFile(shot)
	if err != nil || !bytes.HasPrefix(png, []byte("\x89PNG")) || len(png) < 10_000 {
		t.Fatalf("screenshot: %d bytes, %v", len(png), err)
	}
	if os.Getenv("WEFT_UPDATE_SCREENSHOT") != "" {
		if err := os.WriteFile(filepath.Join("..", "docs", "authorization-consent.png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
