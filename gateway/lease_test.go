package gateway_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weftmcp/weft/client"
	"github.com/weftmcp/weft/exactjson"
	"github.com/weftmcp/weft/gateway"
	"github.com/weftmcp/weft/internal/testpg"
	"github.com/weftmcp/weft/sessionstore"
	"github.com/weftmcp/weft/sessionstore/sqlitestore"
)

// leaseTest is the lease of the parked calls in these tests: short, while
// the upstream's callTimeout is long (a retry that waits for it fails the
// test's patience).
const leaseTest = time.Second

func sqliteStore(t *testing.T, path string) *sqlitestore.Store {
	t.Helper()
	st, err := sqlitestore.Open(context.Background(), path, &sqlitestore.Options{Prefix: "weft_gateway_", PollInterval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

// leaseConfig fronts the fake upstream with a one-minute callTimeout and a
// one-second lease.
func leaseConfig(t *testing.T) (*gateway.Config, string) {
	t.Helper()
	up, log := fakeUpstream(t, "fake")
	up.CallTimeout = gateway.Duration(time.Minute)
	return &gateway.Config{Upstreams: []gateway.UpstreamConfig{up}, Input: gateway.InputConfig{Lease: gateway.Duration(leaseTest)}}, log
}

var elicitCaps = client.Options{Capabilities: exactjson.Object(exactjson.Field("elicitation", exactjson.Object()))}

// park calls tool on the gateway at url and returns the input request's key
// and the requestState of the input_required result.
func park(ctx context.Context, t *testing.T, url, tool string) (key string, state exactjson.Value) {
	t.Helper()
	c := client.New(client.NewHTTPTransport(url, nil), &elicitCaps)
	defer c.Close()
	res, err := c.Call(ctx, "tools/call", map[string]any{"name": tool, "arguments": map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	reqs, _ := res.Get("inputRequests")
	state, _ = res.Get("requestState")
	if reqs.Len() != 1 || state.IsNull() {
		t.Fatalf("result %s", res)
	}
	return reqs.Members()[0].Name, state
}

// retry sends the retry of a parked call to the gateway at url.
func retry(ctx context.Context, url, tool, key string, state exactjson.Value) (exactjson.Value, error) {
	c := client.New(client.NewHTTPTransport(url, nil), &elicitCaps)
	defer c.Close()
	// State is bound to the id of the request that emitted it: a retry
	// travels under another (c's first id is the first request's).
	if _, err := c.ListTools(ctx); err != nil {
		return exactjson.Value{}, err
	}
	return c.Call(ctx, "tools/call", exactjson.Object(
		exactjson.Field("name", exactjson.String(tool)), exactjson.Field("arguments", exactjson.Object()),
		exactjson.Field("inputResponses", exactjson.Object(exactjson.Field(key, answer("answer", "x")))),
		exactjson.Field("requestState", state)))
}

// wantGone checks that err is the clear error of a retry whose parked call
// is gone.
func wantGone(t *testing.T, err error) {
	t.Helper()
	var re *client.RPCError
	if !errors.As(err, &re) || re.Code != client.CodeInvalidParams || !strings.Contains(re.Message, "no longer waiting") ||
		!strings.Contains(re.Message, "start the call over") {
		t.Fatalf("retry: %v; want -32602 \"... no longer waiting ... start the call over ...\"", err)
	}
}

// crash stops a gateway as a crash would for its parked calls: its store
// goes first, so nothing removes their records.
func crash(t *testing.T, in *instance, st interface{ Close() error }) {
	t.Helper()
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	_ = in.gw.Close() // its cleanup fails: the store is closed
}

// `weft gateway` on its SQLite file parks a call and dies; restarted on
// the same file, it answers the retry with a clear error at once (within
// the lease) instead of waiting the upstream's callTimeout for an answer
// that cannot come. With the owner alive, a retry after many leases
// completes through another process's store on the same file.
func TestParkedCallSQLiteRestart(t *testing.T) {
	prot := testKeyring(t)
	t.Run("owner restarted", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		path := filepath.Join(t.TempDir(), "gateway.db")
		cfg, _ := leaseConfig(t)
		st1 := sqliteStore(t, path)
		g1 := startGateway(t, cfg, prot, st1)
		key, state := park(ctx, t, g1.url, "ask")
		crash(t, g1, st1)
		g2 := startGateway(t, cfg, prot, sqliteStore(t, path))
		_, err := retry(ctx, g2.url, "ask", key, state)
		wantGone(t, err)
	})
	t.Run("owner alive", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		path := filepath.Join(t.TempDir(), "gateway.db")
		cfg, _ := leaseConfig(t)
		g1 := startGateway(t, cfg, prot, sqliteStore(t, path))
		g2 := startGateway(t, cfg, prot, sqliteStore(t, path))
		key, state := park(ctx, t, g1.url, "ask")
		// The client takes several leases to answer (the scenario, not a
		// synchronisation): g1's heartbeat keeps the call.
		time.Sleep(4 * leaseTest)
		res, err := retry(ctx, g2.url, "ask", key, state)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(res.String(), "input_required") { // "ask" asks twice
			t.Fatalf("retry after 4 leases: %s", res)
		}
	})
}

// Two instances on PostgreSQL: the retry of a call parked on A waits on B
// while A's upstream works on the answer; A dies. The retry ends within
// the lease with the clear error, not after the upstream's callTimeout.
func TestFleetOwnerDiesDuringRetry(t *testing.T) {
	dsn := testpg.Reachable(t)
	schema := testpg.FreshSchema(t, dsn, "gateway")
	prot := testKeyring(t)
	cfg, log := leaseConfig(t)
	var sa sessionstore.Store = pgStore(t, dsn, schema)
	a := startGateway(t, cfg, prot, sa)
	b := startGateway(t, cfg, prot, pgStore(t, dsn, schema))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	key, state := park(ctx, t, a.url, "askwork")
	errc := make(chan error, 1)
	go func() { _, err := retry(ctx, b.url, "askwork", key, state); errc <- err }()
	waitFor(t, "the answer to reach A's upstream", func() bool { return strings.Contains(readLog(t, log), "askwork answered") })
	select {
	case err := <-errc:
		t.Fatalf("the retry ended while A lived: %v", err)
	default:
	}
	crash(t, a, sa.(interface{ Close() error }))
	wantGone(t, <-errc)
}
