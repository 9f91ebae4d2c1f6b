package weft

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// rawStdio is a client typing raw JSON-RPC lines to ServeStdio over pipes,
// reading its output line by line.
type rawStdio struct {
	t *testing.T
	p *pipeStdio
}

// startLegacyStdio opens a 2025-11-25 session on a new connection to s and
// returns it with the capabilities the server advertised.
func startLegacyStdio(t *testing.T, s *Server) (*rawStdio, M) {
	t.Helper()
	c := &rawStdio{t: t, p: startPipeStdio(t, s, t.Context())}
	c.send(1, "initialize", M{"protocolVersion": LegacyVersion20251125, "capabilities": M{}, "clientInfo": M{"name": "raw", "version": "1"}})
	init := c.next()
	if string(init.ID) != "1" || init.Error != nil {
		t.Fatalf("initialize: %+v", init)
	}
	c.notify("notifications/initialized", nil)
	return c, resultCaps(t, resp{Msg: init, Body: init.Result})
}

// resultCaps is the capabilities member of an initialize or server/discover
// result.
func resultCaps(t *testing.T, r resp) M {
	t.Helper()
	caps, _ := r.result(t)["capabilities"].(M)
	return caps
}

func (c *rawStdio) write(b []byte) {
	c.t.Helper()
	if _, err := c.p.in.Write(append(b, '\n')); err != nil {
		c.t.Fatal(err)
	}
}

// send writes a request (params nil: none).
func (c *rawStdio) send(id any, method string, params M) {
	c.t.Helper()
	c.write(body(c.t, id, method, params))
}

// notify writes a notification (params nil: none).
func (c *rawStdio) notify(method string, params M) {
	c.t.Helper()
	c.write(body(c.t, nil, method, params))
}

// next reads the next line, which must be one whole JSON-RPC message.
func (c *rawStdio) next() rpcMsg {
	c.t.Helper()
	line := c.p.line(c.t)
	var m rpcMsg
	if err := json.Unmarshal(line, &m); err != nil || m.JSONRPC != "2.0" {
		c.t.Fatalf("not one JSON-RPC message: %q (%v)", line, err)
	}
	return m
}

// note reads the next line, which must be the notification method (with
// params.uri equal to uri when uri is not empty).
func (c *rawStdio) note(method, uri string) {
	c.t.Helper()
	m := c.next()
	if m.Method != method || m.ID != nil {
		c.t.Fatalf("got %+v, want the notification %s", m, method)
	}
	if uri != "" {
		if got := noteURI(m); got != uri {
			c.t.Fatalf("%s for %q, want %q", method, got, uri)
		}
	}
}

// ok reads the next line, which must be the empty result of request id.
func (c *rawStdio) ok(id string) {
	c.t.Helper()
	m := c.next()
	if string(m.ID) != id || m.Error != nil {
		c.t.Fatalf("got %+v (error %+v), want the result of request %s", m, m.Error, id)
	}
}

func readText(text string) ResourceHandler {
	return func(ctx context.Context, req *Request) (*ReadResourceResult, error) {
		return &ReadResourceResult{Contents: []ResourceContents{TextResource(req.Name, "text/plain", text)}}, nil
	}
}

func promptText(text string) PromptHandler {
	return func(ctx context.Context, req *Request, args map[string]string) (*GetPromptResult, error) {
		return &GetPromptResult{Messages: []PromptMessage{{Role: RoleUser, Content: TextContent(text)}}}, nil
	}
}

// TestLegacyStdioEvents types a 2025-era session line by line: it hears the
// list changes of tools, prompts and resources and the updates of the
// resources it subscribed to, and no others; after unsubscribe no update of
// that resource arrives.
func TestLegacyStdioEvents(t *testing.T) {
	s, _ := newServer(t, nil)
	addText(t, s, "t", "ok")
	for _, uri := range []string{"test://a", "test://b"} {
		must(t, s.AddResource(Resource{ResourceInfo: ResourceInfo{URI: uri, Name: uri}}, readText(uri)))
	}
	must(t, s.AddPrompt(Prompt{Name: "p"}, promptText("p")))
	c, _ := startLegacyStdio(t, s)

	// A stdio session keeps subscriptions and a log level even where
	// 2025-era HTTP is served without sessions (this server's default).
	c.send("level", "logging/setLevel", M{"level": "info"})
	c.ok(`"level"`)
	c.send(2, "resources/subscribe", M{"uri": "test://a"})
	c.ok("2")
	// Each step publishes what must not arrive first, then what must: the
	// session's events keep their order, so the next line tells.
	s.NotifyResourceUpdated("test://b")
	s.NotifyResourceUpdated("test://a")
	c.note("notifications/resources/updated", "test://a")
	must(t, s.AddTool(Tool{Name: "t2", Description: "Added."}, func(ctx context.Context, req *Request) (*CallToolResult, error) {
		return textResult("t2"), nil
	}))
	c.note("notifications/tools/list_changed", "")
	must(t, s.AddPrompt(Prompt{Name: "p2"}, promptText("p2")))
	c.note("notifications/prompts/list_changed", "")
	must(t, s.AddResource(Resource{ResourceInfo: ResourceInfo{URI: "test://c", Name: "c"}}, readText("c")))
	c.note("notifications/resources/list_changed", "")

	c.send(3, "resources/unsubscribe", M{"uri": "test://a"})
	c.ok("3")
	c.send(4, "resources/subscribe", M{"uri": "test://b"})
	c.ok("4")
	s.NotifyResourceUpdated("test://a")
	s.NotifyResourceUpdated("test://b")
	c.note("notifications/resources/updated", "test://b")

	// A request after the events is answered as usual, and EOF ends the
	// connection with nothing more written.
	c.send(5, "ping", nil)
	c.ok("5")
	c.p.in.Close()
	if err := waitFor(t, c.p.done, "ServeStdio returning at EOF"); err != nil {
		t.Fatalf("ServeStdio: %v", err)
	}
	if rest, _ := io.ReadAll(c.p.out); len(rest) != 0 {
		t.Errorf("written after the last answer: %q", rest)
	}
}

// TestLegacyStdioSessionEnds checks that a stdio connection's end releases
// its session: the session record and its bus subscription go, and later
// changes are not kept for it.
func TestLegacyStdioSessionEnds(t *testing.T) {
	s, _ := newServer(t, nil)
	must(t, s.AddResource(Resource{ResourceInfo: ResourceInfo{URI: "test://a", Name: "a"}}, readText("a")))
	subscribers := func() int {
		s.bus.mu.Lock()
		defer s.bus.mu.Unlock()
		return len(s.bus.subs)
	}
	before := subscribers()
	c, _ := startLegacyStdio(t, s)
	c.send(2, "resources/subscribe", M{"uri": "test://a"})
	c.ok("2")
	if got := s.legacyAdapter().stdioStore.Len(); got != 1 {
		t.Fatalf("%d stdio sessions while connected, want 1", got)
	}
	if got := subscribers(); got != before+1 {
		t.Fatalf("%d bus subscribers while connected, want %d", got, before+1)
	}
	c.p.in.Close()
	if err := waitFor(t, c.p.done, "ServeStdio returning at EOF"); err != nil {
		t.Fatalf("ServeStdio: %v", err)
	}
	if got := s.legacyAdapter().stdioStore.Len(); got != 0 {
		t.Errorf("%d stdio sessions after the connection ended, want 0", got)
	}
	if got := subscribers(); got != before {
		t.Errorf("%d bus subscribers after the connection ended, want %d", got, before)
	}
}

// TestLegacyStdioSecondInitialize refuses a second initialize on a
// connection that has a session, which keeps its events.
func TestLegacyStdioSecondInitialize(t *testing.T) {
	s, _ := newServer(t, nil)
	must(t, s.AddResource(Resource{ResourceInfo: ResourceInfo{URI: "test://a", Name: "a"}}, readText("a")))
	c, _ := startLegacyStdio(t, s)
	c.send(2, "initialize", M{"protocolVersion": "2025-11-25", "capabilities": M{}, "clientInfo": M{"name": "raw", "version": "1"}})
	if m := c.next(); m.Error == nil || m.Error.Code != CodeInvalidRequest {
		t.Fatalf("second initialize: %+v", m)
	}
	if got := s.legacyAdapter().stdioStore.Len(); got != 1 {
		t.Errorf("%d stdio sessions, want 1", got)
	}
	c.send(3, "resources/subscribe", M{"uri": "test://a"})
	c.ok("3")
	s.NotifyResourceUpdated("test://a")
	c.note("notifications/resources/updated", "test://a")
}

// TestLegacyStdioFlood floods resource updates and list changes while calls
// are answered: every line is one whole JSON-RPC message, every call is
// answered once, and the updates arrive coalesced (never more than were
// published).
func TestLegacyStdioFlood(t *testing.T) {
	const (
		calls         = 200
		uris          = 50
		maxPublishes  = 100000
		changesPeriod = 100 // a list change every this many updates
	)
	s, _ := newServer(t, nil)
	must(t, s.AddTool(Tool{Name: "echo", Description: "Echoes its argument, padded."}, func(ctx context.Context, req *Request) (*CallToolResult, error) {
		n, _ := req.Arguments().Get("n")
		return textResult(fmt.Sprintf("%s:%s", n.String(), strings.Repeat("x", 4096))), nil
	}))
	for i := range uris {
		uri := fmt.Sprintf("test://r/%d", i)
		must(t, s.AddResource(Resource{ResourceInfo: ResourceInfo{URI: uri, Name: uri}}, readText(uri)))
	}
	c, _ := startLegacyStdio(t, s)
	c.send("sub", "resources/subscribe", M{"uri": "test://r"}) // the prefix covers every test://r/N
	c.ok(`"sub"`)

	// Updates are published until every call is answered, so they
	// interleave with the answers.
	var (
		wg        sync.WaitGroup
		stop      atomic.Bool
		published int
	)
	wg.Add(2)
	go func() {
		defer wg.Done()
		for ; published < maxPublishes && !stop.Load(); published++ {
			if published%changesPeriod == changesPeriod-1 {
				s.NotifyResourcesChanged()
			}
			s.NotifyResourceUpdated(fmt.Sprintf("test://r/%d", published%uris))
		}
	}()
	go func() {
		defer wg.Done()
		for i := range calls {
			c.send(i, "tools/call", M{"name": "echo", "arguments": M{"n": i}})
		}
	}()
	answered := make(map[string]bool, calls)
	updates, changes := 0, 0
	for len(answered) < calls {
		line := c.p.line(t)
		if bytes.Count(line, []byte("\n")) != 1 || !json.Valid(line) {
			t.Fatalf("not one whole JSON-RPC message per line: %q", line)
		}
		var m rpcMsg
		if err := json.Unmarshal(line, &m); err != nil || m.JSONRPC != "2.0" {
			t.Fatalf("not a JSON-RPC message: %q", line)
		}
		switch {
		case m.ID != nil:
			id := string(m.ID)
			if answered[id] {
				t.Fatalf("request %s answered twice", id)
			}
			if m.Error != nil || !strings.HasPrefix(textOf(t, m), id+":") {
				t.Fatalf("request %s: %q", id, line)
			}
			answered[id] = true
		case m.Method == "notifications/resources/updated":
			if uri := noteURI(m); !strings.HasPrefix(uri, "test://r/") {
				t.Fatalf("update of %q", uri)
			}
			updates++
		case m.Method == "notifications/resources/list_changed":
			changes++
		default:
			t.Fatalf("unexpected message %q", line)
		}
	}
	stop.Store(true)
	wg.Wait()
	// The last publication always arrives: a marker after the flood shows
	// where it ends.
	s.NotifyResourceUpdated("test://r/marker")
	for {
		m := c.next()
		if m.Method == "notifications/resources/updated" && noteURI(m) == "test://r/marker" {
			break
		}
		switch m.Method {
		case "notifications/resources/updated":
			updates++
		case "notifications/resources/list_changed":
			changes++
		default:
			t.Fatalf("unexpected message after the calls: %+v", m)
		}
	}
	if updates == 0 || updates > published || changes > published/changesPeriod {
		t.Errorf("%d updates and %d list changes delivered for %d and %d published", updates, changes, published, published/changesPeriod)
	}
	t.Logf("%d updates and %d list changes delivered for %d and %d published", updates, changes, published, published/changesPeriod)
}

// noteURI is params.uri of a notification.
func noteURI(m rpcMsg) string {
	var p struct {
		URI string `json:"uri"`
	}
	_ = json.Unmarshal(m.Params, &p)
	return p.URI
}

// eventsSide is one client of TestCapabilityClaimsMatchDelivery: the
// capabilities the server advertised to it, and the next notification it
// hears (nil when it can hear none).
type eventsSide struct {
	caps M
	next func() rpcMsg
}

// TestCapabilityClaimsMatchDelivery holds every transport and era to what
// the server advertises: where it claims tools, prompts or resources
// listChanged or resources subscribe, the notification arrives after the
// change (and an update arrives only for the subscribed URI); where it
// claims none (2025-era HTTP without sessions), nothing can be subscribed.
func TestCapabilityClaimsMatchDelivery(t *testing.T) {
	const watched, other = "test://a", "test://b"
	filter := M{"toolsListChanged": true, "promptsListChanged": true, "resourcesListChanged": true, "resourceSubscriptions": []any{watched}}
	stdioNext := func(t *testing.T, c *rawStdio) func() rpcMsg {
		return func() rpcMsg {
			t.Helper()
			for {
				if m := c.next(); m.Method != "notifications/message" {
					return m
				}
			}
		}
	}
	rows := []struct {
		name      string
		stateless bool // 2025-era HTTP without sessions
		open      func(t *testing.T, s *Server) eventsSide
	}{
		{"2026-07-28 HTTP", false, func(t *testing.T, s *Server) eventsSide {
			ts := startHTTP(t, s)
			caps := resultCaps(t, rpc(t, ts.URL, 1, "server/discover", params(nil)))
			_, st, _ := listen(t, ts.URL, 2, filter)
			return eventsSide{caps, func() rpcMsg { m, _ := st.nextMsg(); return m }}
		}},
		{"2026-07-28 stdio", false, func(t *testing.T, s *Server) eventsSide {
			c := &rawStdio{t: t, p: startPipeStdio(t, s, t.Context())}
			c.send(1, "server/discover", params(nil))
			d := c.next()
			caps := resultCaps(t, resp{Msg: d, Body: d.Result})
			c.send(2, "subscriptions/listen", params(M{"notifications": filter}))
			c.note("notifications/subscriptions/acknowledged", "")
			return eventsSide{caps, stdioNext(t, c)}
		}},
		{"2025-11-25 HTTP session", false, func(t *testing.T, s *Server) eventsSide {
			ts := startHTTP(t, s)
			c := newLegacyClient(t, ts.URL)
			caps, _ := c.initialize()["capabilities"].(map[string]any)
			if r := c.call(1, "resources/subscribe", M{"uri": watched}); r.Status != http.StatusOK || r.result(t) == nil {
				t.Fatalf("resources/subscribe: %v", r)
			}
			res, st := c.openGet(t.Context())
			t.Cleanup(func() { res.Body.Close() })
			return eventsSide{caps, func() rpcMsg { m, _ := st.nextMsg(); return m }}
		}},
		{"2025-11-25 HTTP stateless", true, func(t *testing.T, s *Server) eventsSide {
			ts := startHTTP(t, s)
			r := post(t, ts.URL, body(t, 1, "initialize", M{"protocolVersion": LegacyVersion20251125, "capabilities": M{},
				"clientInfo": M{"name": "raw", "version": "1"}}), stdHeaders(nil))
			if r.Header.Get("Mcp-Session-Id") != "" {
				t.Fatalf("a stateless server opened a session: %v", r)
			}
			caps := resultCaps(t, r)
			h := stdHeaders(nil)
			h.Set("MCP-Protocol-Version", LegacyVersion20251125)
			if sub := post(t, ts.URL, body(t, 2, "resources/subscribe", M{"uri": watched}), h); sub.Status != http.StatusOK || sub.wantError(t, http.StatusOK, CodeMethodNotFound) == nil {
				t.Fatalf("resources/subscribe without a session: %v", sub)
			}
			return eventsSide{caps: caps}
		}},
		{"2025-11-25 stdio", false, func(t *testing.T, s *Server) eventsSide {
			c, caps := startLegacyStdio(t, s)
			c.send(2, "resources/subscribe", M{"uri": watched})
			c.ok("2")
			return eventsSide{caps, stdioNext(t, c)}
		}},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			opts := &Options{}
			if !row.stateless {
				opts.Legacy.InMemorySessions = true
			}
			s := listenServer(t, opts)
			must(t, s.AddResource(Resource{ResourceInfo: ResourceInfo{URI: other, Name: "b"}}, readText("b")))
			side := row.open(t, s)
			claims := func(list, flag string) bool {
				c, _ := side.caps[list].(map[string]any)
				return c[flag] == true
			}
			changes := []struct {
				list, flag, method string
				change             func()
			}{
				{"tools", "listChanged", "notifications/tools/list_changed", func() { addText(t, s, "t2", "two") }},
				{"prompts", "listChanged", "notifications/prompts/list_changed", func() { must(t, s.AddPrompt(Prompt{Name: "p2"}, promptText("p2"))) }},
				{"resources", "listChanged", "notifications/resources/list_changed", func() { s.NotifyResourcesChanged() }},
				{"resources", "subscribe", "notifications/resources/updated", func() {
					s.NotifyResourceUpdated(other) // not subscribed: must not arrive
					s.NotifyResourceUpdated(watched)
				}},
			}
			for _, ch := range changes {
				claimed := claims(ch.list, ch.flag)
				if claimed == row.stateless {
					t.Errorf("%s.%s claimed: %v", ch.list, ch.flag, claimed)
				}
				if !claimed {
					continue
				}
				ch.change()
				m := side.next()
				if m.Method != ch.method || (ch.flag == "subscribe" && noteURI(m) != watched) {
					t.Errorf("%s.%s is claimed; after the change the client heard %+v, want %s", ch.list, ch.flag, m, ch.method)
				}
			}
		})
	}
}
