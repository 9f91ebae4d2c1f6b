package weft

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/weftmcp/weft/task"
)

// failingGets is a task store whose reads fail while down is set.
type failingGets struct {
	task.Store
	down bool
}

func (f *failingGets) Get(ctx context.Context, id string) (*task.Record, error) {
	if f.down {
		return nil, errors.New("connection refused")
	}
	return f.Store.Get(ctx, id)
}

func probe(t *testing.T, h http.Handler, method string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, "/readyz", nil))
	return rec.Code, strings.TrimSpace(rec.Body.String())
}

func TestHealth(t *testing.T) {
	appErr := error(nil)
	store := &failingGets{Store: task.NewMemoryStore(nil)}
	t.Cleanup(func() { _ = store.Close() })
	s, logs := legacyServerFor(t, &Options{ReadinessCheck: func(ctx context.Context) error {
		if _, ok := ctx.Deadline(); !ok {
			return errors.New("no deadline")
		}
		return appErr
	}, Tasks: &TaskOptions{Store: store, NoRunner: true}})
	addText(t, s, "echo", "hi")
	live, ready := s.LivenessHandler(), s.ReadinessHandler()

	for _, c := range []struct {
		name       string
		h          http.Handler
		method     string
		code       int
		body       string
		before     func()
		mcpServed  bool
		wantLogged string
	}{
		{name: "alive", h: live, method: "GET", code: 200, body: `{"status":"alive"}`},
		{name: "ready", h: ready, method: "GET", code: 200, body: `{"status":"ready"}`},
		{name: "HEAD", h: ready, method: "HEAD", code: 200, body: ``},
		{name: "POST refused", h: ready, method: "POST", code: 405, body: `method not allowed`},
		{name: "task store down", h: ready, method: "GET", code: 503, body: `{"status":"unavailable","check":"tasks"}`,
			before: func() { store.down = true }, wantLogged: "connection refused"},
		{name: "task store back", h: ready, method: "GET", code: 200, body: `{"status":"ready"}`, before: func() { store.down = false }},
		{name: "application check fails", h: ready, method: "GET", code: 503, body: `{"status":"unavailable","check":"application"}`,
			before: func() { appErr = errors.New("inventory database unreachable") }, wantLogged: "inventory database unreachable"},
		{name: "draining", h: ready, method: "GET", code: 503, body: `{"status":"draining"}`,
			before: func() { appErr = nil; s.Drain() }, mcpServed: true},
		{name: "alive while draining", h: live, method: "GET", code: 200, body: `{"status":"alive"}`},
	} {
		if c.before != nil {
			c.before()
		}
		code, body := probe(t, c.h, c.method)
		if code != c.code || body != c.body {
			t.Errorf("%s: %d %s, want %d %s", c.name, code, body, c.code, c.body)
		}
		if c.wantLogged != "" && logs.count(slog.LevelWarn, c.wantLogged) == 0 {
			t.Errorf("%s: the cause is not logged", c.name)
		}
		if c.wantLogged != "" && strings.Contains(body, c.wantLogged) {
			t.Errorf("%s: the cause is sent to the prober", c.name)
		}
		if c.mcpServed {
			if got := rpcRec(t, s, "/mcp", 1, "tools/call", toolCall(nil, "echo", nil)).text(t); got != "hi" {
				t.Errorf("%s: a drained server must still serve requests, got %q", c.name, got)
			}
		}
	}
	must(t, s.Shutdown(context.Background()))
	if code, body := probe(t, live, "GET"); code != 503 || body != `{"status":"stopped"}` {
		t.Errorf("after Shutdown: %d %s", code, body)
	}
	if code, _ := probe(t, ready, "GET"); code != 503 {
		t.Errorf("ready after Shutdown: %d", code)
	}
	if r := rpcRec(t, s, "/mcp", 2, "tools/call", toolCall(nil, "echo", nil)); r.Status != 503 || r.Header.Get("Retry-After") == "" {
		t.Errorf("a request after Shutdown: %v %v", r, r.Header)
	}
}
