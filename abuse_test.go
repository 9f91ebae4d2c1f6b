package weft

import (
	"context"
	"errors"
	"net/http"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weftmcp/weft/internal/race"
	"github.com/weftmcp/weft/sessionstore"
	"github.com/weftmcp/weft/task"
)

// footprint is what the process holds: goroutines, live heap and RSS.
type footprint struct {
	goroutines int
	heap       uint64 // runtime HeapInuse
	rss        uint64 // VmRSS
}

func measure(t *testing.T) footprint {
	t.Helper()
	runtime.GC()
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return footprint{goroutines: runtime.NumGoroutine(), heap: ms.HeapInuse, rss: vmRSS(t)}
}

func vmRSS(t *testing.T) uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseUint(f[1], 10, 64)
			return kb << 10
		}
	}
	t.Fatal("no VmRSS in /proc/self/status")
	return 0
}

// TestAbuseMemoryBounded opens and abandons what a client can make a server
// hold, each up to its limit: 2025-11-25 sessions, subscriptions/listen
// streams, bridged calls parked on server requests nobody answers, and
// durable tasks parked on input nobody gives. Each limit refuses the next
// one, and once the timeouts pass the goroutines, the live heap and the
// RSS return to their baseline (within slack for the runtime's own
// caches), with every store empty.
func TestAbuseMemoryBounded(t *testing.T) {
	const (
		sessions = 2000
		parked   = 64
		tasks    = 500
		listens  = defaultMaxSubscriptionsPerIdentity // one anonymous caller's share binds first
	)
	store := task.NewMemoryStore(nil)
	t.Cleanup(func() { _ = store.Close() })
	// Sessions live on a clock of the test's: none expires while the test
	// fills the store, and all expire at once when it moves the clock on.
	clock := &fakeClock{t: time.Now()}
	s, _ := legacyServerFor(t, &Options{Now: clock.now, Legacy: LegacyOptions{
		IdleTimeout: time.Minute, MaxLifetime: 2 * time.Minute, InputTimeout: time.Second,
		Limits: sessionstore.Limits{MaxSessions: sessions, MaxPerIdentity: sessions}, // one client fills the store
	}, Tasks: &TaskOptions{Store: store, TTL: time.Second, Retention: time.Millisecond, SweepInterval: 100 * time.Millisecond}})
	t.Cleanup(func() { _ = s.Shutdown(context.Background()) })
	addWizard(t, s, "wizard", StateFramework)
	form := Form(RequiredCapability)
	must(t, s.AddTool(Tool{Name: "park", Description: "Parks a task on input.", Task: TaskRequired, Inputs: []Input{form}},
		func(ctx context.Context, req *Request) (*CallToolResult, error) {
			if req.Task() == nil {
				return nil, RunAsTask(nil)
			}
			return nil, AskInput("q", form.Ask("Never answered", mustParse(t, `{"type":"object","properties":{"v":{"type":"string"}}}`)))
		}))
	ts := startHTTP(t, s)

	// Warm up every path once, then take the baseline.
	warm := newLegacyClient(t, ts.URL)
	warm.initialize()
	warm.onRequest = elicitAccept(M{"v": "x"})
	warm.call(1, "tools/call", M{"name": "wizard"})
	r := rpc(t, ts.URL, 1, "tools/call", toolCall(M{"extensions": M{TasksExtension: M{}}, "elicitation": M{"form": M{}}}, "park", nil))
	if r.result(t)["resultType"] != "task" {
		t.Fatalf("warm-up task: %v", r)
	}
	base := measure(t)

	// Bridged calls waiting for answers that never come (their sessions
	// count against the limit below).
	var wg sync.WaitGroup
	for i := range parked {
		c := newLegacyClient(t, ts.URL)
		c.initialize()
		wg.Go(func() { c.call(i, "tools/call", M{"name": "wizard"}) }) // ends with the InputTimeout
	}
	// Sessions up to the limit; the next one is refused.
	for range sessions - parked - 1 {
		newLegacyClient(t, ts.URL).initialize()
	}
	over := newLegacyClient(t, ts.URL)
	if r := over.send(body(t, 0, "initialize", M{"protocolVersion": LegacyVersion20251125, "capabilities": M{},
		"clientInfo": M{"name": "x", "version": "1"}}), nil); r.Status != http.StatusServiceUnavailable || r.Header.Get("Retry-After") == "" {
		t.Errorf("session %d: %v, want 503 with Retry-After", sessions+1, r)
	}
	// Listen streams up to the caller's limit, abandoned by closing the
	// connections.
	ctx, abandon := context.WithCancel(context.Background())
	t.Cleanup(abandon)
	var streams []*http.Response
	for i := range listens {
		res, st := openStream(t, ctx, ts.URL, i, "subscriptions/listen", params(M{"notifications": M{"toolsListChanged": true}}))
		st.nextMsg()
		streams = append(streams, res)
	}
	if r := rpc(t, ts.URL, 99, "subscriptions/listen", params(M{"notifications": M{"toolsListChanged": true}})); r.Status != http.StatusTooManyRequests {
		t.Errorf("listen stream %d: %v, want 429", listens+1, r)
	}
	// Tasks parked on input.
	var taskIDs []string
	for i := range tasks {
		r := rpc(t, ts.URL, 1000+i, "tools/call", toolCall(M{"extensions": M{TasksExtension: M{}}, "elicitation": M{"form": M{}}}, "park", nil))
		id, _ := r.result(t)["taskId"].(string)
		taskIDs = append(taskIDs, id)
	}
	peak := measure(t)
	clock.advance(3 * time.Minute)
	abandon()
	for _, res := range streams {
		res.Body.Close()
	}
	wg.Wait()

	// Everything ends by itself: sessions expire and are swept, parked calls
	// time out, listen streams notice their clients left, tasks expire and
	// are purged.
	deadline := time.Now().Add(30 * time.Second)
	var end footprint
	for {
		http.DefaultTransport.(*http.Transport).CloseIdleConnections()
		end = measure(t)
		sess := s.legacyAdapter().store.(*sessionstore.Memory).Len()
		left := 0
		for _, id := range taskIDs {
			if _, err := store.Get(context.Background(), id); !errors.Is(err, task.ErrNotFound) {
				left++
			}
		}
		if sess == 0 && left == 0 && end.goroutines <= base.goroutines+2 || time.Now().After(deadline) {
			if sess != 0 || left != 0 {
				t.Errorf("after the timeouts: %d sessions and %d tasks still stored", sess, left)
			}
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("baseline %d goroutines, heap %d KiB, RSS %d KiB; at the limits %d, %d KiB, %d KiB; after %d, %d KiB, %d KiB",
		base.goroutines, base.heap>>10, base.rss>>10, peak.goroutines, peak.heap>>10, peak.rss>>10, end.goroutines, end.heap>>10, end.rss>>10)
	if end.goroutines > base.goroutines+2 {
		buf := make([]byte, 1<<20)
		t.Errorf("goroutines: %d after, baseline %d\n%s", end.goroutines, base.goroutines, buf[:runtime.Stack(buf, true)])
	}
	if end.heap > base.heap+4<<20 {
		t.Errorf("live heap %d KiB after, baseline %d KiB", end.heap>>10, base.heap>>10)
	}
	if end.rss > base.rss+16<<20 && !race.Enabled { // the race detector's shadow memory stays
		t.Errorf("RSS %d KiB after, baseline %d KiB", end.rss>>10, base.rss>>10)
	}
	if peak.heap < base.heap+1<<20 {
		t.Errorf("the abuse held only %d KiB of heap over the baseline: the test measures nothing", (peak.heap-base.heap)>>10)
	}
}
