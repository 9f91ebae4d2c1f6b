package gateway_test

import (
	"context"
	"errors"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/weftmcp/weft/client"
	"github.com/weftmcp/weft/exactjson"
	"github.com/weftmcp/weft/gateway"
)

func fakeClient(t *testing.T, in *instance, h client.Handlers) *client.Client {
	t.Helper()
	c := client.New(client.NewHTTPTransport(in.url, nil), &client.Options{Handlers: h})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// fakePid returns the pid the fake logged first.
func fakePid(t *testing.T, log string) int {
	t.Helper()
	first, _, _ := strings.Cut(readLog(t, log), "\n")
	pid, err := strconv.Atoi(strings.TrimPrefix(first, "pid "))
	if err != nil {
		t.Fatalf("no pid in the fake's log %q", first)
	}
	return pid
}

func alive(pid int) bool { return syscall.Kill(pid, 0) == nil }

func TestUpstreamWontStart(t *testing.T) {
	for _, tc := range []struct {
		name string
		up   gateway.UpstreamConfig
		want []string
	}{
		{"missing command", gateway.UpstreamConfig{Name: "nope", Command: "/nonexistent/weft-upstream"},
			[]string{`upstream "nope"`, "cannot start", "no such file"}},
		{"exits at once", gateway.UpstreamConfig{Name: "quitter", Command: "sh", Args: []string{"-c", "echo broken config >&2; exit 3"}},
			[]string{`upstream "quitter"`, "exit status 3", "broken config"}},
		{"not MCP", gateway.UpstreamConfig{Name: "chatty", Command: "sh", Args: []string{"-c", "echo hello; sleep 30"},
			ShutdownTimeout: gateway.Duration(200 * time.Millisecond)},
			[]string{`upstream "chatty"`, "not a JSON-RPC message", "hello", "stdoutNoise: log"}},
		{"silent", gateway.UpstreamConfig{Name: "mute", Command: "sleep", Args: []string{"30"}, ConnectTimeout: gateway.Duration(300 * time.Millisecond),
			ShutdownTimeout: gateway.Duration(200 * time.Millisecond)},
			[]string{`upstream "mute"`, "deadline exceeded", "connectTimeout", "300ms"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := runtime.NumGoroutine()
			_, err := gateway.New(context.Background(), nil, &gateway.Config{Upstreams: []gateway.UpstreamConfig{tc.up}}, nil)
			if err == nil {
				t.Fatal("New succeeded")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
			waitFor(t, "goroutines to end", func() bool { return runtime.NumGoroutine() <= before })
		})
	}
}

// rpcCode returns the JSON-RPC code of err (0 when it is not one).
func rpcCode(err error) int {
	var re *client.RPCError
	if errors.As(err, &re) {
		return re.Code
	}
	return 0
}

func TestUpstreamMisbehavesMidCall(t *testing.T) {
	up, log := fakeUpstream(t, "fake")
	up.CallTimeout = gateway.Duration(500 * time.Millisecond)
	in := startGateway(t, &gateway.Config{Upstreams: []gateway.UpstreamConfig{up}}, testKeyring(t), nil)
	c := fakeClient(t, in, client.Handlers{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if res, err := c.CallTool(ctx, "echo", map[string]any{"x": 1}); err != nil || res.Text() != `{"x":1}` {
		t.Fatalf("echo: %v %v", res, err)
	}
	for _, tc := range []struct {
		tool string
		want string
	}{
		{"hang", "did not answer in time"},
		{"crash", "the connection to it broke"},
		{"garbage", "the connection to it broke"},
	} {
		t.Run(tc.tool, func(t *testing.T) {
			pid := fakePid(t, log)
			_, err := c.CallTool(ctx, tc.tool, nil)
			if rpcCode(err) != gateway.CodeUpstreamUnavailable || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want code %d and %q", err, gateway.CodeUpstreamUnavailable, tc.want)
			}
			if tc.tool == "hang" {
				waitFor(t, "the upstream to see the cancellation", func() bool { return strings.Contains(readLog(t, log), "cancelled") })
			} else {
				waitFor(t, "the broken upstream to be gone", func() bool { return !alive(pid) })
				_ = os.Remove(log) // the restarted fake logs its own pid
			}
			// The gateway reconnects for the next call.
			if res, err := c.CallTool(ctx, "echo", map[string]any{"after": tc.tool}); err != nil || !strings.Contains(res.Text(), tc.tool) {
				t.Fatalf("echo after %s: %v %v", tc.tool, res, err)
			}
			waitFor(t, "no parked calls", func() bool { return in.gw.Parked() == 0 })
		})
	}
	pid := fakePid(t, log)
	if err := in.gw.Close(); err != nil {
		t.Fatal(err)
	}
	if alive(pid) {
		t.Fatalf("upstream %d still runs after Close", pid)
	}
}

func answer(key, text string) exactjson.Value {
	return exactjson.Object(exactjson.Field("action", exactjson.String("accept")),
		exactjson.Field("content", exactjson.Object(exactjson.Field(key, exactjson.String(text)))))
}

func TestParkedRounds(t *testing.T) {
	up, _ := fakeUpstream(t, "fake")
	in := startGateway(t, &gateway.Config{Upstreams: []gateway.UpstreamConfig{up}}, testKeyring(t), nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var msgs []string
	c := fakeClient(t, in, client.Handlers{
		Elicit: func(_ context.Context, p exactjson.Value) (exactjson.Value, error) {
			m, _ := p.Get("message")
			s, _ := m.AsString()
			msgs = append(msgs, s)
			return answer("answer", "to-"+s), nil
		},
		Sample: func(context.Context, exactjson.Value) (exactjson.Value, error) {
			return exactjson.Parse([]byte(`{"role":"assistant","content":{"type":"text","text":"sampled"},"model":"m"}`), exactjson.Limits{})
		},
		Roots: func(context.Context) (exactjson.Value, error) {
			return exactjson.Parse([]byte(`{"roots":[{"uri":"file:///r"}]}`), exactjson.Limits{})
		},
	})
	res, err := c.CallTool(ctx, "ask", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Text(); got != `"to-first" "to-second"` || strings.Join(msgs, ",") != "first,second" {
		t.Fatalf("result %q after %v", got, msgs)
	}
	res, err = c.CallTool(ctx, "sample", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Text(); !strings.Contains(got, "sampled") || !strings.Contains(got, "file:///r") {
		t.Fatalf("result %q", got)
	}
	waitFor(t, "no parked calls", func() bool { return in.gw.Parked() == 0 })
}

// A client that never retries: the parked call is cancelled upstream when
// its lifetime ends, and a late retry is refused.
func TestParkedCallAbandoned(t *testing.T) {
	up, log := fakeUpstream(t, "fake")
	cfg := &gateway.Config{Upstreams: []gateway.UpstreamConfig{up}, Input: gateway.InputConfig{Lifetime: gateway.Duration(time.Second)}}
	in := startGateway(t, cfg, testKeyring(t), nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := client.New(client.NewHTTPTransport(in.url, nil), &client.Options{Capabilities: exactjson.Object(
		exactjson.Field("elicitation", exactjson.Object()))})

	defer c.Close()
	res, err := c.Call(ctx, "tools/call", map[string]any{"name": "ask", "arguments": map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	if rt, _ := res.Get("resultType"); !strings.Contains(rt.String(), "input_required") {
		t.Fatalf("result %s", res)
	}
	if in.gw.Parked() != 1 {
		t.Fatalf("%d parked calls, want 1", in.gw.Parked())
	}
	waitFor(t, "the abandoned call to be cancelled upstream", func() bool {
		return strings.Contains(readLog(t, log), "cancelled") && in.gw.Parked() == 0
	})
	reqs, _ := res.Get("inputRequests")
	key := reqs.Members()[0].Name
	state, _ := res.Get("requestState")
	_, err = c.Call(ctx, "tools/call", exactjson.Object(
		exactjson.Field("name", exactjson.String("ask")), exactjson.Field("arguments", exactjson.Object()),
		exactjson.Field("inputResponses", exactjson.Object(exactjson.Field(key, answer("answer", "late")))),
		exactjson.Field("requestState", state)))
	if rpcCode(err) != client.CodeInvalidParams || !strings.Contains(err.Error(), "no longer waiting") {
		t.Fatalf("late retry: %v", err)
	}
}

// A retry without the answer to a request gets the request again.
func TestParkedMissingAnswerAskedAgain(t *testing.T) {
	up, _ := fakeUpstream(t, "fake")
	in := startGateway(t, &gateway.Config{Upstreams: []gateway.UpstreamConfig{up}}, testKeyring(t), nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := client.New(client.NewHTTPTransport(in.url, nil), &client.Options{Capabilities: exactjson.Object(
		exactjson.Field("elicitation", exactjson.Object()))})

	defer c.Close()
	call := func(responses, state exactjson.Value) exactjson.Value {
		t.Helper()
		p := exactjson.Object(exactjson.Field("name", exactjson.String("ask")), exactjson.Field("arguments", exactjson.Object()))
		if !state.IsNull() {
			p = p.With("inputResponses", responses).With("requestState", state)
		}
		res, err := c.Call(ctx, "tools/call", p)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	keyOf := func(res exactjson.Value) (string, exactjson.Value) {
		t.Helper()
		reqs, _ := res.Get("inputRequests")
		if reqs.Len() != 1 {
			t.Fatalf("result %s", res)
		}
		st, _ := res.Get("requestState")
		return reqs.Members()[0].Name, st
	}
	k1, st := keyOf(call(exactjson.Value{}, exactjson.Value{}))
	k2, st := keyOf(call(exactjson.Object(), st)) // no answer: asked again
	if k2 != k1 {
		t.Fatalf("asked %q again as %q", k1, k2)
	}
	k3, st := keyOf(call(exactjson.Object(exactjson.Field(k2, answer("answer", "x"))), st))
	res := call(exactjson.Object(exactjson.Field(k3, answer("answer", "y"))), st)
	if !strings.Contains(res.String(), `\"x\" \"y\"`) {
		t.Fatalf("final %s", res)
	}
}

func TestParkedBounds(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	t.Run("rounds", func(t *testing.T) {
		up, log := fakeUpstream(t, "fake")
		in := startGateway(t, &gateway.Config{Upstreams: []gateway.UpstreamConfig{up}, Input: gateway.InputConfig{MaxRounds: 1}}, testKeyring(t), nil)
		c := fakeClient(t, in, client.Handlers{Elicit: func(context.Context, exactjson.Value) (exactjson.Value, error) {
			return answer("answer", "a"), nil
		}})
		_, err := c.CallTool(ctx, "ask", nil) // asks twice
		if err == nil || !strings.Contains(err.Error(), "asked for input more than 1 times") {
			t.Fatalf("error %v", err)
		}
		waitFor(t, "the call to be cancelled upstream", func() bool {
			return strings.Contains(readLog(t, log), "cancelled") && in.gw.Parked() == 0
		})
	})
	t.Run("per partition", func(t *testing.T) {
		up, _ := fakeUpstream(t, "fake")
		in := startGateway(t, &gateway.Config{Upstreams: []gateway.UpstreamConfig{up}, Input: gateway.InputConfig{MaxParkedPerPartition: 1}}, testKeyring(t), nil)
		c := client.New(client.NewHTTPTransport(in.url, nil), &client.Options{Capabilities: exactjson.Object(
			exactjson.Field("elicitation", exactjson.Object()))})

		defer c.Close()
		params := map[string]any{"name": "ask", "arguments": map[string]any{}}
		if res, err := c.Call(ctx, "tools/call", params); err != nil || !strings.Contains(res.String(), "input_required") {
			t.Fatalf("first: %v %v", res, err)
		}
		res, err := c.Call(ctx, "tools/call", params)
		if err == nil || !strings.Contains(err.Error(), "Too many calls are waiting for input") {
			t.Fatalf("second: %v %v", res, err)
		}
		waitFor(t, "one parked call", func() bool { return in.gw.Parked() == 1 })
	})
}

// Concurrent calls of a 2025 stdio upstream that ask for input each get a
// process of their own, so every request reaches the right client.
func TestConcurrentParkedCallsOnStdio(t *testing.T) {
	up, _ := fakeUpstream(t, "fake")
	up.MaxProcesses = 3
	in := startGateway(t, &gateway.Config{Upstreams: []gateway.UpstreamConfig{up}}, testKeyring(t), nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const n = 5 // more calls than processes: some wait for a free one
	errs := make(chan error, n)
	for i := range n {
		name := "c" + strconv.Itoa(i)
		c := fakeClient(t, in, client.Handlers{Elicit: func(_ context.Context, p exactjson.Value) (exactjson.Value, error) {
			return answer("answer", name), nil
		}})
		go func() {
			res, err := c.CallTool(ctx, "ask", nil)
			if err == nil && res.Text() != `"`+name+`" "`+name+`"` {
				err = errors.New(name + " got " + res.Text())
			}
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	waitFor(t, "no parked calls", func() bool { return in.gw.Parked() == 0 })
}

// Progress of a parked call reaches the client on every round: the first
// request's and the retry's. The upstream's URL elicitation reaches the
// client without its elicitationId, and the completion notification that
// follows it is consumed (2026-07-28 has none: the client learns the
// outcome by retrying).
func TestParkedProgressAndURLCompletion(t *testing.T) {
	up, _ := fakeUpstream(t, "fake")
	in := startGateway(t, &gateway.Config{Upstreams: []gateway.UpstreamConfig{up}}, testKeyring(t), nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var mu sync.Mutex
	var progress []float64
	var asked []exactjson.Value
	c := client.New(client.NewHTTPTransport(in.url, nil), &client.Options{
		Handlers: client.Handlers{Elicit: func(_ context.Context, p exactjson.Value) (exactjson.Value, error) {
			mu.Lock()
			asked = append(asked, p)
			mu.Unlock()
			return exactjson.Object(exactjson.Field("action", exactjson.String("accept"))), nil
		}},
		OnProgress: func(p, _ float64, _ string) {
			mu.Lock()
			progress = append(progress, p)
			mu.Unlock()
		}})

	defer c.Close()
	res, err := c.CallTool(ctx, "link", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Text(); got != `linked "accept"` {
		t.Fatalf("result %q", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(progress, []float64{1, 2, 3}) {
		t.Errorf("progress %v, want [1 2 3] (round 0, then the retry's)", progress)
	}
	if len(asked) != 1 || str(asked[0], "mode") != "url" || str(asked[0], "url") != "https://example.com/connect" || asked[0].Has("elicitationId") {
		t.Errorf("the client was asked %v", asked)
	}
}

// A client of the 2025 era, through the server's bridge, is given the
// upstream's elicitationId with the URL elicitation and is told of its
// completion (notifications/elicitation/complete, which 2026-07-28
// removed), and its progress after the round still arrives.
func TestURLCompletionToLegacyClient(t *testing.T) {
	up, _ := fakeUpstream(t, "fake")
	in := startGateway(t, &gateway.Config{Upstreams: []gateway.UpstreamConfig{up}}, testKeyring(t), nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var mu sync.Mutex
	var asked []exactjson.Value
	var completed []string
	c := client.New(client.NewHTTPTransport(in.url, nil), &client.Options{ProtocolVersion: "2025-11-25",
		Handlers: client.Handlers{Elicit: func(_ context.Context, p exactjson.Value) (exactjson.Value, error) {
			mu.Lock()
			asked = append(asked, p)
			mu.Unlock()
			return exactjson.Object(exactjson.Field("action", exactjson.String("accept"))), nil
		}},
		OnNotification: func(n client.Notification) {
			if n.Method == "notifications/elicitation/complete" {
				mu.Lock()
				completed = append(completed, str(n.Params, "elicitationId"))
				mu.Unlock()
			}
		}})

	defer c.Close()
	res, err := c.CallTool(ctx, "link", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Text(); got != `linked "accept"` {
		t.Fatalf("result %q", got)
	}
	if v := c.ProtocolVersion(); v != "2025-11-25" {
		t.Fatalf("the client spoke %s", v)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(asked) != 1 || str(asked[0], "mode") != "url" || str(asked[0], "elicitationId") != "el-1" {
		t.Errorf("the client was asked %v, want the upstream's elicitationId el-1", asked)
	}
	if !slices.Equal(completed, []string{"el-1"}) {
		t.Errorf("completions %v, want [el-1]", completed)
	}
}

// A 2025 upstream refusing a call with -32042 (URL elicitation required,
// gone in 2026-07-28) gives the client input_required with the URL
// interactions; the client's retry calls the upstream again, unless the
// client declined.
func TestURLElicitationRequiredTranslated(t *testing.T) {
	for _, tc := range []struct {
		action string
		want   string
		code   int
	}{
		{"accept", "connected after 2 calls", 0},
		{"decline", "", gateway.CodeUpstreamError},
	} {
		t.Run(tc.action, func(t *testing.T) {
			up, _ := fakeUpstream(t, "fake")
			in := startGateway(t, &gateway.Config{Upstreams: []gateway.UpstreamConfig{up}}, testKeyring(t), nil)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			var asked []exactjson.Value
			c := fakeClient(t, in, client.Handlers{Elicit: func(_ context.Context, p exactjson.Value) (exactjson.Value, error) {
				asked = append(asked, p)
				return exactjson.Object(exactjson.Field("action", exactjson.String(tc.action))), nil
			}})
			res, err := c.CallTool(ctx, "needsurl", nil)
			if tc.code != 0 {
				var re *client.RPCError
				if !errors.As(err, &re) || re.Code != tc.code {
					t.Fatalf("declined: %v %v", res, err)
				}
			} else if err != nil || res.Text() != tc.want {
				t.Fatalf("result %v %v, want %q", res, err, tc.want)
			}
			if len(asked) != 1 || str(asked[0], "mode") != "url" || str(asked[0], "url") != "https://example.com/connect" || asked[0].Has("elicitationId") {
				t.Errorf("the client was asked %v", asked)
			}
		})
	}
	// A client without URL elicitation gets the upstream's error relayed.
	up, _ := fakeUpstream(t, "fake")
	in := startGateway(t, &gateway.Config{Upstreams: []gateway.UpstreamConfig{up}}, testKeyring(t), nil)
	c := fakeClient(t, in, client.Handlers{})
	_, err := c.CallTool(context.Background(), "needsurl", nil)
	var re *client.RPCError
	if !errors.As(err, &re) || re.Code != gateway.CodeUpstreamError || !strings.Contains(re.Data.String(), "-32042") {
		t.Fatalf("without URL elicitation: %v", err)
	}
}
