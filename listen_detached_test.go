package weft

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	"github.com/weftmcp/weft/task"
)

// goroutinesWith counts the goroutines whose stack mentions frame.
func goroutinesWith(t testing.TB, frame string) int {
	t.Helper()
	var buf bytes.Buffer
	if err := pprof.Lookup("goroutine").WriteTo(&buf, 2); err != nil {
		t.Fatal(err)
	}
	return strings.Count(buf.String(), frame)
}

// waitUntil polls cond until it holds or the hang guard passes.
func waitUntil(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(hangGuard)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("hang guard: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// settleDetached waits until no detached stream's reader runs (those of
// earlier tests end when their clients close), so that a test can count
// its own.
func settleDetached(t testing.TB) {
	t.Helper()
	waitUntil(t, "the detached streams of earlier tests end", func() bool { return goroutinesWith(t, "(*detachedStream).watch") == 0 })
}

// detachedOf waits until s holds n detached streams and returns them.
func detachedOf(t testing.TB, s *Server, n int) []*detachedStream {
	t.Helper()
	var out []*detachedStream
	waitUntil(t, fmt.Sprintf("%d streams are detached", n), func() bool {
		out = out[:0]
		s.bus.mu.Lock()
		for sub := range s.bus.subs {
			sub.mu.Lock()
			if sub.ds != nil {
				out = append(out, sub.ds)
			}
			sub.mu.Unlock()
		}
		s.bus.mu.Unlock()
		return len(out) == n
	})
	return out
}

// openListens is the number of listen streams the bus holds reserved.
func openListens(s *Server) int {
	s.bus.mu.Lock()
	defer s.bus.mu.Unlock()
	n := 0
	for _, c := range s.bus.open {
		n += c
	}
	return n
}

// frameKey names a listen frame for comparison: the method, the URI of a
// resource update.
func frameKey(t testing.TB, f []byte) string {
	n := decodeNotification(t, f)
	if n.Params.URI != "" {
		return n.Method + " " + n.Params.URI
	}
	return n.Method
}

// TestListenDetachedStream: a listen stream over HTTP/1.1 leaves its
// request goroutine once acknowledged, delivers exactly the events its
// filter wants, in order, each with its subscription id, and ends at
// Shutdown with its closing result and the response's last chunk.
func TestListenDetachedStream(t *testing.T) {
	lc := newLogCapture()
	s := listenServer(t, &Options{Logger: lc.logger()})
	ts := startHTTP(t, s)
	cases := []struct {
		name   string
		filter M
		want   []string
	}{
		{"tools", M{"toolsListChanged": true}, []string{"notifications/tools/list_changed"}},
		{"uris", M{"resourceSubscriptions": []string{"test://a"}},
			[]string{"notifications/resources/updated test://a", "notifications/resources/updated test://a/x"}},
		{"everything", M{"toolsListChanged": true, "promptsListChanged": true, "resourcesListChanged": true, "resourceSubscriptions": []string{"test://a"}},
			[]string{"notifications/prompts/list_changed", "notifications/resources/updated test://a", "notifications/tools/list_changed",
				"notifications/resources/list_changed", "notifications/resources/updated test://a/x"}},
	}
	settleDetached(t)
	type open struct {
		res *http.Response
		st  *sseStream
	}
	var streams []open
	for _, c := range cases {
		res, st, ack := listen(t, ts.URL, c.name, c.filter)
		if string(ack.Params.Meta.SubscriptionID) != `"`+c.name+`"` {
			t.Fatalf("%s: ack subscription id %s", c.name, ack.Params.Meta.SubscriptionID)
		}
		if !res.Close {
			t.Errorf("%s: a detached stream's response must say Connection: close", c.name)
		}
		streams = append(streams, open{res, st})
	}
	// Detached: no stream waits in listenLoop, each has its one reader.
	detachedOf(t, s, len(cases))
	if n := goroutinesWith(t, "(*Server).listenLoop"); n != 0 {
		t.Errorf("%d goroutines wait in listenLoop; detached streams have none", n)
	}
	if n := goroutinesWith(t, "(*detachedStream).watch"); n != len(cases) {
		t.Errorf("%d reader goroutines for %d detached streams", n, len(cases))
	}
	// Each request completed at the hand-over, with its log line.
	logged := 0
	for _, r := range lc.records() {
		if r.Msg == "mcp request" && strings.Contains(r.Attrs, "method=subscriptions/listen") && strings.Contains(r.Attrs, "outcome=complete") {
			logged++
		}
	}
	if logged != len(cases) {
		t.Errorf("%d request log lines for %d detached streams", logged, len(cases))
	}

	must(t, s.AddPrompt(Prompt{Name: "p2", Description: "Another prompt."}, func(ctx context.Context, req *Request, args map[string]string) (*GetPromptResult, error) {
		return &GetPromptResult{}, nil
	}))
	s.NotifyResourceUpdated("test://b")
	s.NotifyResourceUpdated("test://a")
	addText(t, s, "t2", "two")
	s.NotifyResourcesChanged()
	s.NotifyResourceUpdated("test://a/x")
	s.NotifyResourceUpdated("test://ab") // not under test://a/

	for i, c := range cases {
		st := streams[i].st
		for _, want := range c.want {
			m, f := st.nextMsg()
			if got := frameKey(t, f); got != want {
				t.Fatalf("%s: got %s, want %s", c.name, f, want)
			}
			if n := decodeNotification(t, f); string(n.Params.Meta.SubscriptionID) != `"`+c.name+`"` {
				t.Fatalf("%s: frame without its subscription id: %s", c.name, f)
			}
			_ = m
		}
	}
	// Shutdown: the next frame of each is its closing result, then the
	// response ends cleanly (the terminating chunk: io.EOF, not an
	// unexpected one).
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	must(t, s.Shutdown(ctx))
	for i, c := range cases {
		st := streams[i].st
		m, f := st.nextMsg()
		if string(m.ID) != `"`+c.name+`"` || m.Result == nil || !strings.Contains(string(m.Result), `"io.modelcontextprotocol/subscriptionId":"`+c.name+`"`) {
			t.Fatalf("%s: after the events, want the closing result, got %s", c.name, f)
		}
		if _, err := st.next(); !errors.Is(err, io.EOF) {
			t.Fatalf("%s: after the closing result: %v, want the end of the response", c.name, err)
		}
	}
	waitUntil(t, "the detached streams' readers end", func() bool { return goroutinesWith(t, "(*detachedStream).watch") == 0 })
	if n := openListens(s); n != 0 {
		t.Errorf("%d listen streams still reserved after Shutdown", n)
	}
}

// TestListenDetachedClientLeaves: a client closing its detached stream
// frees the partition's slot and the stream's goroutine.
func TestListenDetachedClientLeaves(t *testing.T) {
	s := listenServer(t, &Options{Limits: Limits{MaxSubscriptionsPerPartition: 1}})
	ts := startHTTP(t, s)
	settleDetached(t)
	res, _, _ := listen(t, ts.URL, 1, M{"toolsListChanged": true})
	if r := rpc(t, ts.URL, 2, "subscriptions/listen", params(M{"notifications": M{"toolsListChanged": true}})); r.Status != http.StatusTooManyRequests {
		t.Fatalf("a second stream over the limit: %v, want 429", r)
	}
	res.Body.Close()
	waitUntil(t, "the stream's slot is freed", func() bool { return openListens(s) == 0 })
	waitUntil(t, "the stream's reader ends", func() bool { return goroutinesWith(t, "(*detachedStream).watch") == 0 })
	s.bus.mu.Lock()
	subs := len(s.bus.subs)
	s.bus.mu.Unlock()
	if subs != 0 {
		t.Errorf("%d subscriptions left on the bus", subs)
	}
	// The slot is usable again, and the new stream is live.
	_, st, _ := listen(t, ts.URL, 3, M{"toolsListChanged": true})
	addText(t, s, "t2", "two")
	if m, f := st.nextMsg(); m.Method != "notifications/tools/list_changed" {
		t.Fatalf("got %s", f)
	}
}

// rawListen opens a listen stream on a TCP connection of its own and reads
// up to its acknowledgement; the caller then reads (or not) from br.
func rawListen(t testing.TB, addr string, id int, filter M) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	b := body(t, id, "subscriptions/listen", params(M{"notifications": filter}))
	var req bytes.Buffer
	fmt.Fprintf(&req, "POST / HTTP/1.1\r\nHost: %s\r\n", addr)
	for k, vs := range stdHeaders(b) {
		for _, v := range vs {
			fmt.Fprintf(&req, "%s: %s\r\n", k, v)
		}
	}
	fmt.Fprintf(&req, "Content-Length: %d\r\n\r\n", len(b))
	req.Write(b)
	if _, err := c.Write(req.Bytes()); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("reading the acknowledgement: %v", err)
		}
		if strings.Contains(line, "subscriptions/acknowledged") {
			return c, br
		}
	}
}

// stallListens opens n listen streams for test://a whose clients never
// read, and floods them with far more than loopback socket buffers hold.
func stallListens(t testing.TB, s *Server, addr string, n int) {
	t.Helper()
	for i := range n {
		c, _ := rawListen(t, addr, i, M{"resourceSubscriptions": []string{"test://a"}})
		_ = c.(*net.TCPConn).SetReadBuffer(4096)
	}
	big := strings.Repeat("x", 60<<10)
	for i := range 400 {
		s.NotifyResourceUpdated("test://a/" + big + fmt.Sprint(i))
	}
}

// TestListenDetachedStalledClients: streams whose clients stop reading
// hold none of the shared writers: with more of them than there are
// writers, and a WriteTimeout past the hang guard, a healthy stream still
// gets its event.
func TestListenDetachedStalledClients(t *testing.T) {
	s := listenServer(t, &Options{WriteTimeout: 2 * hangGuard, KeepAlive: hangGuard})
	ts := startHTTP(t, s)
	_, healthy, _ := listen(t, ts.URL, "healthy", M{"toolsListChanged": true})
	stalled := maxListenWriters() + 1
	stallListens(t, s, ts.Listener.Addr().String(), stalled)
	addText(t, s, "t2", "two")
	got := make(chan string, 1)
	go func() {
		f, err := healthy.next()
		if err != nil {
			got <- err.Error()
			return
		}
		got <- string(f)
	}()
	if f := waitFor(t, got, "the healthy stream hears its event while the stalled ones block"); !strings.Contains(f, "notifications/tools/list_changed") {
		t.Fatalf("healthy stream: got %s", f)
	}
	if n := openListens(s); n != stalled+1 {
		t.Fatalf("%d streams open, want the %d stalled ones and the healthy one", n, stalled)
	}
}

// TestListenDetachedWriteTimeout: a stream whose client stops reading is
// closed once a write passes WriteTimeout, which frees its slot.
func TestListenDetachedWriteTimeout(t *testing.T) {
	s := listenServer(t, &Options{WriteTimeout: 300 * time.Millisecond, KeepAlive: 100 * time.Millisecond})
	ts := startHTTP(t, s)
	settleDetached(t)
	stallListens(t, s, ts.Listener.Addr().String(), 2)
	waitUntil(t, "the stalled streams are closed at WriteTimeout", func() bool { return openListens(s) == 0 })
	waitUntil(t, "their readers end", func() bool { return goroutinesWith(t, "(*detachedStream).watch") == 0 })
}

// TestListenDetachedShutdownStalled: Shutdown's context bounds the ending
// of detached streams whose clients stopped reading (their writes would
// otherwise hold it for WriteTimeout, past the hang guard here).
func TestListenDetachedShutdownStalled(t *testing.T) {
	s := listenServer(t, &Options{WriteTimeout: 2 * hangGuard, KeepAlive: hangGuard})
	ts := startHTTP(t, s)
	stallListens(t, s, ts.Listener.Addr().String(), maxListenWriters()+1)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- s.Shutdown(ctx) }()
	if err := waitFor(t, done, "Shutdown returns once its context is done"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown: %v, want the context's deadline", err)
	}
	waitUntil(t, "the stalled streams are released", func() bool { return openListens(s) == 0 })
}

// TestListenDetachedCoalesces: events that reach a stream while its
// previous write is in progress are coalesced (each pending event once, in
// order of first arrival), as on the request goroutine.
func TestListenDetachedCoalesces(t *testing.T) {
	s := listenServer(t, nil)
	ts := startHTTP(t, s)
	_, st, _ := listen(t, ts.URL, 1, M{"toolsListChanged": true, "promptsListChanged": true, "resourcesListChanged": true})
	ds := detachedOf(t, s, 1)[0]
	ds.wmu.Lock() // a write in progress
	for range 50 {
		s.bus.deliver(event{kind: evToolsListChanged})
		s.bus.deliver(event{kind: evPromptsListChanged})
	}
	s.bus.deliver(event{kind: evResourcesListChanged})
	ds.wmu.Unlock()
	var got []string
	for {
		m, _ := st.nextMsg()
		if m.Method == "notifications/resources/list_changed" {
			break
		}
		got = append(got, strings.TrimPrefix(m.Method, "notifications/"))
	}
	// The first write holds what was pending when it was taken (tools, or
	// tools and prompts); everything after waits, coalesced: at most tools
	// and prompts once more, in either order (so prompts may follow
	// prompts across the two writes, but no kind comes more than twice).
	if len(got) < 2 || len(got) > 4 || got[0] != "tools/list_changed" {
		t.Fatalf("101 events while a write was held reached the client as %v, want them coalesced", got)
	}
	seen := map[string]int{}
	for _, m := range got {
		if seen[m]++; seen[m] > 2 {
			t.Fatalf("coalesced frames %v carry %s more than once per write", got, m)
		}
	}
}

// TestListenDetachedTaskEvents: a detached stream subscribed to a task
// gets its status notification, authorized per event.
func TestListenDetachedTaskEvents(t *testing.T) {
	store := task.NewMemoryStore(nil)
	t.Cleanup(func() { _ = store.Close() })
	s, _ := newServer(t, &Options{Tasks: &TaskOptions{Store: store, PollInterval: 10 * time.Millisecond}})
	t.Cleanup(func() { _ = s.Shutdown(context.Background()) })
	release := make(chan struct{})
	must(t, s.AddTool(Tool{Name: "job", Description: "Runs as a task.", Task: TaskOptional},
		func(ctx context.Context, req *Request) (*CallToolResult, error) {
			if req.Task() == nil {
				return nil, RunAsTask(nil)
			}
			select {
			case <-release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return textResult("done"), nil
		}))
	ts := startHTTP(t, s)
	r := rpc(t, ts.URL, 1, "tools/call", toolCall(tasksCaps, "job", nil))
	taskID, _ := r.result(t)["taskId"].(string)
	if taskID == "" {
		t.Fatalf("no task: %v", r)
	}
	res, st := openStream(t, context.Background(), ts.URL, "tasks", "subscriptions/listen",
		paramsCaps(tasksCaps, M{"notifications": M{"taskIds": []string{taskID, "no-such-task"}}}))
	t.Cleanup(func() { res.Body.Close() })
	if m, f := st.nextMsg(); m.Method != "notifications/subscriptions/acknowledged" || !strings.Contains(string(f), taskID) || strings.Contains(string(f), "no-such-task") {
		t.Fatalf("ack: %s", f)
	}
	detachedOf(t, s, 1)
	close(release)
	for {
		m, f := st.nextMsg()
		if m.Method != "notifications/tasks" {
			t.Fatalf("got %s, want task notifications", f)
		}
		if !strings.Contains(string(f), taskID) || !strings.Contains(string(f), `"io.modelcontextprotocol/subscriptionId":"tasks"`) {
			t.Fatalf("task notification: %s", f)
		}
		if strings.Contains(string(f), `"status":"completed"`) {
			break
		}
	}
	res.Body.Close()
	waitUntil(t, "the task stream's slot is freed", func() bool { return openListens(s) == 0 })
	waitUntil(t, "its task subscription ends", func() bool { return goroutinesWith(t, "(*detachedStream).taskLoop") == 0 })
}

// unwrapWriter wraps a ResponseWriter, as an application's HTTP middleware
// would: it may transform the body, so the stream is not detached.
type unwrapWriter struct{ http.ResponseWriter }

func (w unwrapWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// TestListenNotDetached: HTTP/2, TLS and wrapped writers keep the stream on
// its request goroutine, which still delivers and ends at Shutdown.
func TestListenNotDetached(t *testing.T) {
	for _, c := range []struct {
		name  string
		start func(h http.Handler) (*httptest.Server, *http.Client)
	}{
		{"HTTP/2", func(h http.Handler) (*httptest.Server, *http.Client) {
			ts := httptest.NewUnstartedServer(h)
			ts.EnableHTTP2 = true
			ts.StartTLS()
			return ts, ts.Client()
		}},
		{"HTTP/1.1 over TLS", func(h http.Handler) (*httptest.Server, *http.Client) {
			ts := httptest.NewTLSServer(h)
			return ts, ts.Client()
		}},
		{"wrapped writer", func(h http.Handler) (*httptest.Server, *http.Client) {
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.ServeHTTP(unwrapWriter{w}, r) }))
			return ts, http.DefaultClient
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := listenServer(t, nil)
			ts, client := c.start(s)
			t.Cleanup(ts.Close)
			b := body(t, 7, "subscriptions/listen", params(M{"notifications": M{"toolsListChanged": true}}))
			req, err := http.NewRequest(http.MethodPost, ts.URL, bytes.NewReader(b))
			must(t, err)
			req.Header = stdHeaders(b)
			res, err := client.Do(req)
			must(t, err)
			defer res.Body.Close()
			if (c.name == "HTTP/2") != (res.ProtoMajor == 2) {
				t.Fatalf("served over %s", res.Proto)
			}
			st := &sseStream{t: t, br: bufio.NewReader(res.Body)}
			if m, f := st.nextMsg(); m.Method != "notifications/subscriptions/acknowledged" {
				t.Fatalf("got %s", f)
			}
			waitUntil(t, "the stream waits in listenLoop", func() bool { return goroutinesWith(t, "(*Server).listenLoop") == 1 })
			addText(t, s, "t2", "two")
			if m, f := st.nextMsg(); m.Method != "notifications/tools/list_changed" {
				t.Fatalf("got %s", f)
			}
			ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
			defer cancel()
			must(t, s.Shutdown(ctx))
			if m, f := st.nextMsg(); string(m.ID) != "7" || m.Result == nil {
				t.Fatalf("want the closing result, got %s", f)
			}
		})
	}
}
