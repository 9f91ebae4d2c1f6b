package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestCLITimeout: a server that accepts every request and then sends only
// SSE keep-alive comments holds no command forever: each gives up at its
// --timeout and says so; listen has no bound by default.
func TestCLITimeout(t *testing.T) {
	var held atomic.Int64
	stop := make(chan struct{})
	hung := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.Error(w, "no", http.StatusMethodNotAllowed)
			return
		}
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		held.Add(1)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-tick.C:
				if _, err := io.WriteString(w, ": keep-alive\n\n"); err != nil {
					return
				}
				w.(http.Flusher).Flush()
			case <-r.Context().Done():
				return
			case <-stop:
				return
			}
		}
	}))
	defer hung.Close()
	defer close(stop)
	for _, args := range [][]string{
		{"tools", hung.URL + "/mcp", "--timeout", "1s"},
		{"call", hung.URL + "/mcp", "echo", "--timeout", "1s"},
		{"read", hung.URL + "/mcp", "test://x", "--timeout", "1s"},
		{"task", "get", hung.URL + "/mcp", "t1", "--timeout", "1s"},
	} {
		t.Run(args[0], func(t *testing.T) {
			cmd := exec.Command(weftBin, args...)
			done := make(chan struct{})
			var out []byte
			var err error
			go func() {
				out, err = cmd.CombinedOutput()
				close(done)
			}()
			select {
			case <-done:
			case <-time.After(time.Minute):
				_ = cmd.Process.Kill()
				<-done
				t.Fatalf("weft %s still waiting after a minute:\n%s", strings.Join(args, " "), out)
			}
			if err == nil || !strings.Contains(string(out), "within 1s") || !strings.Contains(string(out), "--timeout") {
				t.Errorf("weft %s: %v\n%s\nwant a failure naming the 1s --timeout", strings.Join(args, " "), err, out)
			}
		})
	}
	if held.Load() == 0 {
		t.Error("the hung server held no request: the commands failed before reaching it")
	}
}
