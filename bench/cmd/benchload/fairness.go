package main

// The noisy-neighbour rows (issue 25): tenant B's tools/call latency on a
// Weft server alone, and while tenant A floods the same server with slow
// calls; once with the default per-caller shares and once with them turned
// off (one shared gate, as before issue 25), to show what the shares buy.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weftmcp/weft"
	"github.com/weftmcp/weft/gateway"
)

// Shape of the noisy-neighbour rows.
const (
	fairFloodClients = 384                    // tenant A's concurrent clients: more than the slots and the queue together
	fairSlowCall     = 50 * time.Millisecond  // each of A's calls holds its slot this long
	fairRefusedPause = 100 * time.Millisecond // A's client pauses this long after a 503
	fairTenantHeader = "X-Bench-Tenant"
)

// fairRow is tenant B's view of one phase.
type fairRow struct {
	phase    string
	calls    int // B's calls
	failed   int // B's calls that were not answered 200 with a result
	p50, p99 time.Duration
	// aServed and aRefused count A's calls answered and refused (503)
	// during the phase.
	aServed, aRefused int64
}

// fairPhases are the rows: B alone, B during A's flood, and B during A's
// flood with the per-caller shares off.
var fairPhases = []struct {
	name    string
	flood   bool
	shared  bool
	gateway bool
}{
	{"B alone", false, false, false},
	{"B during A's flood (default per-caller shares)", true, false, false},
	{"B during A's flood, per-caller shares off (MaxConcurrentPerIdentity = MaxConcurrent, MaxQueuePerIdentity = MaxQueue)", true, true, false},
	{"B alone, through a gateway", false, false, true},
	{"B during A's flood, through a gateway (default per-caller shares)", true, false, true},
}

// fairnessRows measures each phase rounds times, n calls of B each, on a
// Weft server in this process on loopback (default Options but for the
// shares; admission makes the tenant header the partition).
func fairnessRows(ctx context.Context, rounds, n int) ([]fairRow, error) {
	rows := make([]fairRow, len(fairPhases))
	lat := make([][]time.Duration, len(fairPhases))
	for round := range rounds {
		for i, ph := range fairPhases {
			logf("  round %d: %s", round+1, ph.name)
			l, r, err := fairPhase(ctx, ph.flood, ph.shared, ph.gateway, n)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", ph.name, err)
			}
			lat[i] = append(lat[i], l...)
			rows[i].phase = ph.name
			rows[i].calls += r.calls
			rows[i].failed += r.failed
			rows[i].aServed += r.aServed
			rows[i].aRefused += r.aRefused
		}
	}
	for i := range rows {
		slices.Sort(lat[i])
		rows[i].p50, rows[i].p99 = percentile(lat[i], 0.50), percentile(lat[i], 0.99)
	}
	return rows, nil
}

// fairPhase starts a server, optionally floods it as tenant A, and times
// n sequential calls of tenant B (the latencies of the successful ones).
// Through a gateway, the tenants call a gateway in front of the server,
// each with its own bearer token: the gateway admits the token as the
// caller and passes it through, and the server partitions by it.
func fairPhase(ctx context.Context, flood, shared, viaGateway bool, n int) ([]time.Duration, fairRow, error) {
	opts := &weft.Options{Logger: slog.New(slog.DiscardHandler),
		Admission: func(_ context.Context, r *weft.AdmissionRequest) (weft.Identity, error) {
			if r.BearerToken != "" {
				return weft.Identity{Partition: r.BearerToken}, nil
			}
			return weft.Identity{Partition: r.Header.Get(fairTenantHeader)}, nil
		}}
	if shared {
		// The defaults of MaxConcurrent and MaxQueue, named so that the
		// per-caller bounds can equal them (which turns those bounds off).
		opts.MaxConcurrent, opts.MaxQueue = 64, 256
		opts.MaxConcurrentPerIdentity, opts.MaxQueuePerIdentity = opts.MaxConcurrent, opts.MaxQueue
	}
	s, err := weft.NewServer(weft.Implementation{Name: "bench-fair", Version: "1"}, opts)
	if err != nil {
		return nil, fairRow{}, err
	}
	type sum struct {
		Sum int64 `json:"sum"`
	}
	type addArgs struct{ A, B int64 }
	if err := weft.AddTool(s, weft.Tool{Name: "add", Description: "Adds two integers."}, func(ctx context.Context, req *weft.Request, in addArgs) (sum, error) {
		return sum{Sum: in.A + in.B}, nil
	}); err != nil {
		return nil, fairRow{}, err
	}
	if err := weft.AddTool(s, weft.Tool{Name: "slow", Description: "Holds its handler slot for a while."}, func(ctx context.Context, req *weft.Request, _ struct{}) (sum, error) {
		select {
		case <-time.After(fairSlowCall):
		case <-ctx.Done():
		}
		return sum{}, nil
	}); err != nil {
		return nil, fairRow{}, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fairRow{}, err
	}
	hs := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	defer hs.Close()
	url := "http://" + ln.Addr().String() + "/mcp"
	if viaGateway {
		gurl, closeGW, err := fairGateway(ctx, url)
		if err != nil {
			return nil, fairRow{}, err
		}
		defer closeGW()
		url = gurl
	}
	tr := &http.Transport{MaxIdleConnsPerHost: fairFloodClients + 8}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: time.Minute}

	var row fairRow
	fctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var served, refused atomic.Int64
	if flood {
		started := make(chan struct{}, fairFloodClients)
		for range fairFloodClients {
			wg.Go(func() {
				first := true
				for fctx.Err() == nil {
					status, _ := fairCall(fctx, client, url, "a", "slow", `{}`)
					if first {
						first = false
						started <- struct{}{}
					}
					switch status {
					case http.StatusOK:
						served.Add(1)
					case http.StatusServiceUnavailable:
						refused.Add(1)
						select {
						case <-time.After(fairRefusedPause):
						case <-fctx.Done():
						}
					}
				}
			})
		}
		// The flood is on once every client of A has had an answer.
		for range fairFloodClients {
			<-started
		}
	}
	served.Store(0)
	refused.Store(0)
	var lat []time.Duration
	for range n {
		t0 := time.Now()
		status, ok := fairCall(ctx, client, url, "b", "add", `{"A":40,"B":2}`)
		d := time.Since(t0)
		row.calls++
		if status != http.StatusOK || !ok {
			row.failed++
			continue
		}
		lat = append(lat, d)
	}
	row.aServed, row.aRefused = served.Load(), refused.Load()
	stop()
	wg.Wait()
	if ctx.Err() != nil {
		return nil, row, ctx.Err()
	}
	if len(lat) == 0 {
		return nil, row, errors.New("no call of tenant B succeeded")
	}
	return lat, row, nil
}

// fairGateway serves a gateway in front of the server at upstream, on
// loopback: default Options, callers admitted by their bearer token
// (principal and partition), passed through to the upstream.
func fairGateway(ctx context.Context, upstream string) (string, func(), error) {
	gs, err := weft.NewServer(weft.Implementation{Name: "bench-fair-gateway", Version: "1"}, &weft.Options{Logger: slog.New(slog.DiscardHandler),
		Admission: func(_ context.Context, r *weft.AdmissionRequest) (weft.Identity, error) {
			if r.BearerToken == "" {
				return weft.Identity{}, &weft.AdmissionError{Status: http.StatusUnauthorized, Message: "no token"}
			}
			return weft.Identity{Principal: r.BearerToken, Partition: r.BearerToken}, nil
		}})
	if err != nil {
		return "", nil, err
	}
	gw, err := gateway.New(ctx, gs, &gateway.Config{Upstreams: []gateway.UpstreamConfig{
		{Name: "up", URL: upstream, Protocol: weft.ProtocolVersion, Authorization: "passthrough"}}}, &gateway.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return "", nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		_ = gw.Close()
		return "", nil, err
	}
	hs := &http.Server{Handler: gs, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	return "http://" + ln.Addr().String() + "/mcp", func() { _ = hs.Close(); _ = gw.Close() }, nil
}

// fairCall posts one tools/call as tenant and reports the HTTP status and
// whether the body holds a result.
func fairCall(ctx context.Context, c *http.Client, url, tenant, tool, args string) (int, bool) {
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + tool + `","arguments":` + args +
		`,"_meta":{"io.modelcontextprotocol/protocolVersion":"` + weft.ProtocolVersion + `","io.modelcontextprotocol/clientCapabilities":{}}}}`)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, false
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", weft.ProtocolVersion)
	req.Header.Set("Mcp-Method", "tools/call")
	req.Header.Set("Mcp-Name", tool)
	req.Header.Set(fairTenantHeader, tenant)
	req.Header.Set("Authorization", "Bearer "+tenant)
	res, err := c.Do(req)
	if err != nil {
		return 0, false
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return res.StatusCode, err == nil && bytes.Contains(b, []byte(`"result"`))
}

// fairnessSection writes the noisy-neighbour section.
func (r *report) fairnessSection(p func(format string, args ...any)) {
	p("## Noisy neighbour: tenant B's tools/call during tenant A's flood\n\n")
	p("One Weft server in this process on loopback, default `Options` (64 handler slots, a queue of 256) with an admission that makes "+
		"a request header the partition. Tenant A floods it from %d concurrent clients with calls that each hold a handler slot for %s, "+
		"pausing %s after each refusal (503); tenant B makes %d sequential calls of a fast tool per round (%d rounds), timed from send to "+
		"the whole response read. \"Per-caller shares off\" sets `MaxConcurrentPerIdentity` and `MaxQueuePerIdentity` to the totals: the "+
		"one shared gate Weft had before issue 25. \"Through a gateway\": the tenants call a `gateway.New` server in front of it (default `Options`), "+
		"each with its own bearer token, which the gateway admits as the caller and passes through (`authorization: passthrough`), so that "+
		"both the gateway's shares and the server's are the tenant's. A's counts are its calls answered and refused while B was measured.\n\n",
		fairFloodClients, fairSlowCall, fairRefusedPause, r.cfg.n/10, r.cfg.rounds)
	p("| phase | B's calls | B's failures | B p50 | B p99 | A served | A refused |\n|---|---:|---:|---:|---:|---:|---:|\n")
	for _, row := range r.fairness {
		p("| %s | %d | %d | %s | %s | %d | %d |\n", row.phase, row.calls, row.failed, us(row.p50), us(row.p99), row.aServed, row.aRefused)
	}
	p("\n")
}

// fairnessTargets are issue 25's goals for the noisy-neighbour rows.
func (r *report) fairnessTargets() []target {
	if len(r.fairness) < 2 {
		return nil
	}
	alone, flood := r.fairness[0], r.fairness[1]
	var ts []target
	if len(r.fairness) >= 5 {
		galone, gflood := r.fairness[3], r.fairness[4]
		ts = append(ts, target{"tenant B's tools/call all served during tenant A's flood through a gateway",
			fmt.Sprintf("%d of %d", gflood.calls-gflood.failed, gflood.calls), gflood.failed == 0},
			target{"tenant B's tools/call p50 during tenant A's flood through a gateway < 2× alone through it",
				fmt.Sprintf("%s vs %s", us(gflood.p50), us(galone.p50)), gflood.p50 < 2*galone.p50})
	}
	return append(ts, []target{
		{"tenant B's tools/call all served during tenant A's flood (default per-caller shares)",
			fmt.Sprintf("%d of %d", flood.calls-flood.failed, flood.calls), flood.failed == 0},
		{"tenant B's tools/call p50 during tenant A's flood < 2× alone (default per-caller shares)",
			fmt.Sprintf("%s vs %s", us(flood.p50), us(alone.p50)), flood.p50 < 2*alone.p50},
	}...)
}
