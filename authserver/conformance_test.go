package authserver

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestConformanceAuthorizationServer runs the official MCP conformance
// suite's authorization-server scenarios (metadata endpoint, authorization
// code grant) against this server in front of Hydra, acting as the user's
// browser: the suite prints the authorization URL and waits for the
// redirect to its callback. It runs when WEFT_CONFORMANCE_AS=1 (make
// conformance, through scripts/conformance-authserver.sh); it needs the
// shared conformance runner (WEFT_CONFORMANCE_SH).
func TestConformanceAuthorizationServer(t *testing.T) {
	if os.Getenv("WEFT_CONFORMANCE_AS") == "" {
		t.Skip("set WEFT_CONFORMANCE_AS=1 (make conformance)")
	}
	runner := os.Getenv("WEFT_CONFORMANCE_SH")
	if runner == "" {
		runner = filepath.Join("..", "..", "shared", "tools", "conformance.sh")
	}
	if _, err := os.Stat(runner); err != nil {
		t.Fatalf("conformance runner: %v (set WEFT_CONFORMANCE_SH)", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	callback := "http://127.0.0.1:" + strconv.Itoa(port) + "/callback"
	e := newEnv(t, envOpts{mutate: func(c *Config) {
		c.Clients = []Client{{ID: "conformance-client", Name: "MCP conformance suite", RedirectURIs: []string{callback}}}
	}})

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", runner, "--suite-cli", "authorization",
		"--url", e.asURL, "--client-id", "conformance-client", "--resource", e.resource, "-p", strconv.Itoa(port))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	sc := bufio.NewScanner(out)
	drove := false
	for sc.Scan() {
		line := sc.Text()
		log.WriteString(line + "\n")
		if !drove && strings.HasPrefix(strings.TrimSpace(line), e.asURL+"/authorize?") {
			drove = true
			authURL := strings.TrimSpace(line)
			go func() {
				b := newBrowser(t, callback)
				resp, err := b.c.Get(authURL)
				if err != nil {
					t.Errorf("browser: %v", err)
					return
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					// The consent page: approve it like a user.
					form := formAction.FindStringSubmatch(string(body))
					if form == nil {
						t.Errorf("no consent form")
						return
					}
					vals := map[string][]string{"action": {"approve"}}
					for _, h := range hiddenInput.FindAllStringSubmatch(string(body), -1) {
						vals[h[1]] = []string{h[2]}
					}
					resp, err = b.c.PostForm(form[1], vals)
					if err != nil {
						t.Errorf("consent: %v", err)
						return
					}
					resp.Body.Close()
				}
				loc := resp.Header.Get("Location")
				if !strings.HasPrefix(loc, callback) {
					t.Errorf("flow ended at %d %q", resp.StatusCode, loc)
					return
				}
				r, err := http.Get(loc) // the suite's callback server
				if err != nil {
					t.Errorf("callback: %v", err)
					return
				}
				r.Body.Close()
			}()
		}
	}
	err = cmd.Wait()
	t.Logf("conformance suite output:\n%s", log.String())
	if !drove {
		t.Fatal("the suite printed no authorization URL")
	}
	if err != nil {
		t.Fatalf("conformance suite failed: %v", err)
	}
	if strings.Contains(log.String(), "FAILURE") || !strings.Contains(log.String(), "authorization-code-grant") {
		t.Fatal("conformance suite reported a failure or did not run the authorization code grant")
	}
}
