package gateway_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weftmcp/weft/client"
	"github.com/weftmcp/weft/gateway"
)

// listenGate passes an upstream's HTTP requests through, letting each
// subscriptions/listen request in only after a delay, or (holding) once
// the test releases it, and counting the listen streams let in and open.
// The streams numbered up to slowUpTo (from 1, in the order let in) write
// each chunk slowWrite late.
type listenGate struct {
	next     http.Handler
	opened   atomic.Int32
	open     atomic.Int32
	slowUpTo atomic.Int32
	mu       sync.Mutex
	held     chan chan struct{} // a listen request waiting: close the channel to let it in
	holding  bool
	delay    time.Duration
}

func (g *listenGate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost && r.Header.Get("Mcp-Method") == "subscriptions/listen" {
		g.mu.Lock()
		hold, delay := g.holding, g.delay
		g.mu.Unlock()
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			return
		}
		if hold {
			release := make(chan struct{})
			g.held <- release
			select {
			case <-release:
			case <-r.Context().Done():
				return
			}
		}
		// A wrapped writer keeps the stream on this goroutine (a
		// weft server detaches it from net/http's own), so that it is
		// counted while it is open.
		n := g.opened.Add(1)
		g.open.Add(1)
		defer g.open.Add(-1)
		w = gatedWriter{w, func() bool { return n <= g.slowUpTo.Load() }}
	}
	g.next.ServeHTTP(w, r)
}

// slowWrite is how late a slow stream's chunks are written.
const slowWrite = 300 * time.Millisecond

type gatedWriter struct {
	http.ResponseWriter
	slow func() bool
}

func (w gatedWriter) Write(p []byte) (int, error) {
	if w.slow() {
		time.Sleep(slowWrite)
	}
	return w.ResponseWriter.Write(p)
}

func (w gatedWriter) Flush() { http.NewResponseController(w.ResponseWriter).Flush() }

// set makes the next listen requests wait delay, then (hold) the test's
// release.
func (g *listenGate) set(delay time.Duration, hold bool) {
	g.mu.Lock()
	g.delay, g.holding = delay, hold
	g.mu.Unlock()
}

// TestListenCoversWhatIsServed: the gateway serves a 2026-07-28
// upstream's resources only once its subscriptions/listen stream to that
// upstream is acknowledged, so an update the upstream announces right
// after the gateway starts reaches a subscriber; and when the stream is
// reopened for a changed resource list, the old one stays open until a
// while after the new one is acknowledged, so no update falls between the
// two.
func TestListenCoversWhatIsServed(t *testing.T) {
	upSrv, _ := httpUpstream(t)
	addTextResource(t, upSrv, "test://a")
	// Every listen stream is let in only a while after it is asked for:
	// gateway.New must wait for it.
	gate := &listenGate{next: upSrv, held: make(chan chan struct{}, 4)}
	gate.set(500*time.Millisecond, false)
	hs := httptest.NewServer(gate)
	t.Cleanup(hs.Close)
	in := startGateway(t, &gateway.Config{Upstreams: []gateway.UpstreamConfig{{Name: "up", URL: hs.URL, Protocol: gateway.Version20260728, Prefix: "up_"}}}, testKeyring(t), nil)
	c := client.New(client.NewHTTPTransport(in.url, nil), nil)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sub := subscribe(ctx, t, c, "test://up/a")
	upSrv.NotifyResourceUpdated("test://a")
	expectUpdate(t, sub, "test://up/a", "right after the start")

	// A new resource upstream: the gateway reopens its listen stream. While
	// the new one is held, the old one (now slow) still relays.
	gate.set(0, true)
	gate.slowUpTo.Store(gate.opened.Load())
	addTextResource(t, upSrv, "test://b")
	var release chan struct{}
	select {
	case release = <-gate.held:
	case <-ctx.Done():
		t.Fatal("the gateway did not reopen its listen stream for the new resource")
	}
	var once sync.Once
	let := func() { once.Do(func() { close(release) }) }
	t.Cleanup(let) // before hs.Close, which waits for the request
	gate.set(0, false)
	upSrv.NotifyResourceUpdated("test://a")
	expectUpdate(t, sub, "test://up/a", "while the new stream is opening")
	// An update announced just before the new stream is let in goes out
	// on the old one only, and arrives after the new one is acknowledged:
	// the old stream still relays it.
	before := gate.opened.Load()
	upSrv.NotifyResourceUpdated("test://a")
	let()
	expectUpdate(t, sub, "test://up/a", "announced as the new stream opened")
	// Once the new stream is acknowledged the old one is closed.
	for gate.opened.Load() == before || gate.open.Load() != 1 {
		select {
		case <-ctx.Done():
			t.Fatalf("%d listen streams let in, %d open upstream, want %d and 1", gate.opened.Load(), gate.open.Load(), before+1)
		case <-time.After(20 * time.Millisecond):
		}
	}
	upSrv.NotifyResourceUpdated("test://a")
	expectUpdate(t, sub, "test://up/a", "after the new stream is acknowledged")
}
