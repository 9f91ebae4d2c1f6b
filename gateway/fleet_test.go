package gateway_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weftmcp/weft/client"
	"github.com/weftmcp/weft/exactjson"
	"github.com/weftmcp/weft/gateway"
	"github.com/weftmcp/weft/internal/testpg"
	"github.com/weftmcp/weft/sessionstore"
	"github.com/weftmcp/weft/sessionstore/pgstore"
)

// splitTransport sends a call's first request to one gateway instance and
// every retry to another, as a load balancer without sticky sessions may.
type splitTransport struct {
	first, retries client.Transport
	sent           atomic.Int64
	retried        atomic.Int64
}

func (s *splitTransport) Do(ctx context.Context, req *client.Request, notify func(client.Notification)) (*client.Response, error) {
	if req.Params.Has("inputResponses") {
		s.retried.Add(1)
		return s.retries.Do(ctx, req, notify)
	}
	s.sent.Add(1)
	return s.first.Do(ctx, req, notify)
}

func (s *splitTransport) Close() error { return errorsJoin(s.first.Close(), s.retries.Close()) }

func errorsJoin(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

func pgStore(t *testing.T, dsn, schema string) sessionstore.Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := pgstore.Open(ctx, dsn, &pgstore.Options{Schema: schema, Prefix: "weft_gateway_",
		Limits: sessionstore.Limits{MaxPerIdentity: 10}, PollInterval: 100 * time.Millisecond})

	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

// The retry of a call parked on instance A goes to instance B; the answers
// reach A's upstream through PostgreSQL and the result comes back to B.
func TestFleetRetryOnAnotherInstance(t *testing.T) {
	dsn := testpg.Reachable(t)
	schema := testpg.FreshSchema(t, dsn, "gateway")
	prot := testKeyring(t)
	for _, tc := range []struct {
		name string
		up   func(t *testing.T) gateway.UpstreamConfig
		tool string
		want string
		ans  exactjson.Value
		args map[string]any
	}{
		{"weft serve --stdio pinned to 2025-11-25", func(t *testing.T) gateway.UpstreamConfig { return demoUpstream(t, gateway.Version20251125) },
			"demo.catalog.continue", "Catalog access approved; continuing.", exactjson.Object(), nil},
		{"official Go SDK v1.8.0 server", func(t *testing.T) gateway.UpstreamConfig { return gosdkUpstream(t, gateway.Version20251125) },
			"sdk_confirm", "fleet confirmed by B (accept)", exactjson.Object(exactjson.Field("name", exactjson.String("B"))), map[string]any{"topic": "fleet"}},
		{"two rounds", func(t *testing.T) gateway.UpstreamConfig { u, _ := fakeUpstream(t, "fake"); return u },
			"ask", `"B" "B"`, exactjson.Object(exactjson.Field("answer", exactjson.String("B"))), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := &gateway.Config{Upstreams: []gateway.UpstreamConfig{tc.up(t)}}
			a := startGateway(t, cfg, prot, pgStore(t, dsn, schema))
			b := startGateway(t, cfg, prot, pgStore(t, dsn, schema))
			st := &splitTransport{first: client.NewHTTPTransport(a.url, nil), retries: client.NewHTTPTransport(b.url, nil)}
			c := client.New(st, &client.Options{Handlers: client.Handlers{Elicit: acceptForm(tc.ans)}})
			defer c.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			res, err := c.CallTool(ctx, tc.tool, tc.args)
			if err != nil {
				t.Fatal(err)
			}
			if got := res.Text(); got != tc.want {
				t.Fatalf("result %q, want %q", got, tc.want)
			}
			if st.retried.Load() == 0 {
				t.Fatal("no retry reached instance B")
			}
			if tc.tool == "ask" && st.retried.Load() != 2 {
				t.Fatalf("%d retries, want 2", st.retried.Load())
			}
			waitFor(t, "no parked calls", func() bool { return a.gw.Parked() == 0 && b.gw.Parked() == 0 })
		})
	}
}

// The instance holding a parked call stops: the call is cancelled upstream
// and the retry, on another instance, gets a clear error at once.
func TestFleetParkedInstanceGone(t *testing.T) {
	dsn := testpg.Reachable(t)
	schema := testpg.FreshSchema(t, dsn, "gateway")
	prot := testKeyring(t)
	up, log := fakeUpstream(t, "fake")
	cfg := &gateway.Config{Upstreams: []gateway.UpstreamConfig{up}}
	a := startGateway(t, cfg, prot, pgStore(t, dsn, schema))
	b := startGateway(t, cfg, prot, pgStore(t, dsn, schema))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	caps := client.Options{Capabilities: exactjson.Object(exactjson.Field("elicitation", exactjson.Object()))}
	ca := client.New(client.NewHTTPTransport(a.url, nil), &caps)
	defer ca.Close()
	res, err := ca.Call(ctx, "tools/call", map[string]any{"name": "ask", "arguments": map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	reqs, _ := res.Get("inputRequests")
	state, _ := res.Get("requestState")
	if reqs.Len() != 1 {
		t.Fatalf("result %s", res)
	}
	if err := a.gw.Close(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the upstream to see the cancellation", func() bool { return strings.Contains(readLog(t, log), "cancelled") })
	cb := client.New(client.NewHTTPTransport(b.url, nil), &caps)
	defer cb.Close()
	// State is bound to the id of the request that emitted it: a retry
	// travels under another (cb's first id is ca's).
	if _, err := cb.ListTools(ctx); err != nil {
		t.Fatal(err)
	}
	_, err = cb.Call(ctx, "tools/call", exactjson.Object(
		exactjson.Field("name", exactjson.String("ask")), exactjson.Field("arguments", exactjson.Object()),
		exactjson.Field("inputResponses", exactjson.Object(exactjson.Field(reqs.Members()[0].Name, answer("answer", "x")))),
		exactjson.Field("requestState", state)))
	var re *client.RPCError
	if !errors.As(err, &re) || re.Code != client.CodeInvalidParams || !strings.Contains(re.Message, "no longer waiting") {
		t.Fatalf("retry on B: %v", err)
	}
}

// The retry of a parked call served by another instance gets the progress
// the call reports on that round, through the shared store's mailbox.
func TestFleetRetryProgress(t *testing.T) {
	prot := testKeyring(t)
	stores := map[string]func(t *testing.T) (sessionstore.Store, sessionstore.Store){
		"memory shared in process": func(t *testing.T) (sessionstore.Store, sessionstore.Store) {
			st := sessionstore.NewMemory(nil)
			return st, st
		},
		"PostgreSQL": func(t *testing.T) (sessionstore.Store, sessionstore.Store) {
			dsn := testpg.Reachable(t)
			schema := testpg.FreshSchema(t, dsn, "gateway")
			return pgStore(t, dsn, schema), pgStore(t, dsn, schema)
		},
	}
	for name, mk := range stores {
		t.Run(name, func(t *testing.T) {
			sa, sb := mk(t)
			up, _ := fakeUpstream(t, "fake")
			cfg := &gateway.Config{Upstreams: []gateway.UpstreamConfig{up}}
			a := startGateway(t, cfg, prot, sa)
			b := startGateway(t, cfg, prot, sb)
			st := &splitTransport{first: client.NewHTTPTransport(a.url, nil), retries: client.NewHTTPTransport(b.url, nil)}
			var mu sync.Mutex
			var progress []float64
			c := client.New(st, &client.Options{
				Handlers: client.Handlers{Elicit: func(context.Context, exactjson.Value) (exactjson.Value, error) {
					return exactjson.Object(exactjson.Field("action", exactjson.String("accept"))), nil
				}},
				OnProgress: func(p, _ float64, _ string) {
					mu.Lock()
					progress = append(progress, p)
					mu.Unlock()
				}})

			defer c.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			res, err := c.CallTool(ctx, "link", nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := res.Text(); got != `linked "accept"` || st.retried.Load() != 1 {
				t.Fatalf("result %q after %d retries", got, st.retried.Load())
			}
			mu.Lock()
			got := slices.Clone(progress)
			mu.Unlock()
			if !slices.Equal(got, []float64{1, 2, 3}) {
				t.Errorf("progress %v, want [1 2 3] (A's first round, then B's retry)", got)
			}
			waitFor(t, "no parked calls", func() bool { return a.gw.Parked() == 0 && b.gw.Parked() == 0 })
		})
	}
}
