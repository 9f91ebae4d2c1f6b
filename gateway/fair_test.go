package gateway_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	weft "github.com/weftmcp/weft"
	"github.com/weftmcp/weft/client"
	"github.com/weftmcp/weft/exactjson"
	"github.com/weftmcp/weft/gateway"
)

// callerClient is a 2026-07-28 client of the gateway presenting "Bearer
// name" (tokenAdmission makes it principal and partition name) that
// declares elicitation but answers nothing itself: Call returns the
// gateway's input_required as it is.
func callerClient(t *testing.T, in *instance, name string) *client.Client {
	t.Helper()
	tr := client.NewHTTPTransport(in.url, &client.HTTPOptions{BearerToken: name})
	c := client.New(tr, &client.Options{Capabilities: exactjson.Object(exactjson.Field("elicitation", exactjson.Object()))})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func callTool(ctx context.Context, c *client.Client, name string, args exactjson.Value) (exactjson.Value, error) {
	return c.Call(ctx, "tools/call", exactjson.Object(exactjson.Field("name", exactjson.String(name)), exactjson.Field("arguments", args)))
}

// D1 of issue 25: calls of a 2025-era stdio upstream that ask for input and
// are never retried must not keep the upstream's processes from the other
// callers. Caller A parks calls, then floods far more; caller B's calls
// are still served: one needing no input completes, and one asking for
// input parks and completes on its retry. (Before parked calls were
// multiplexed, every process stayed with A's parked calls for
// input.lifetime and B's echo got -31050 after callTimeout.)
func TestParkedCallsDoNotStarveOtherCallers(t *testing.T) {
	for _, exclusive := range []bool{false, true} {
		t.Run(fmt.Sprintf("oneCallPerProcess=%v", exclusive), func(t *testing.T) { parkedCallsDoNotStarve(t, exclusive) })
	}
}

// parkedCallsDoNotStarve: by default A's parked calls share the process A
// owns; with oneCallPerProcess (exclusive) each keeps its own. Either way
// A holds at most its share of the processes (one of two): its flood's
// calls are refused past maxParkedPerCaller, or wait for a process of its
// share in vain (-31050: the refused ones taint the process A owns, which
// then takes no new call), and B's calls run on the other.
func parkedCallsDoNotStarve(t *testing.T, exclusive bool) {
	up, _ := fakeUpstream(t, "fake")
	up.MaxProcesses = 2
	up.OneCallPerProcess = exclusive
	up.CallTimeout = gateway.Duration(5 * time.Second)
	in := startGatewayAdmitting(t, &gateway.Config{Upstreams: []gateway.UpstreamConfig{up}}, testKeyring(t), nil, tokenAdmission)
	a, b := callerClient(t, in, "alice"), callerClient(t, in, "bob")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	// A parks calls and never retries them (but the first).
	var first exactjson.Value
	parks := up.MaxProcesses
	if exclusive {
		parks = up.MaxProcesses / 2 // its share of the processes
	}
	for i := range parks {
		res, err := callTool(ctx, a, "ask", exactjson.Object())
		if err != nil || str(res, "resultType") != "input_required" {
			t.Fatalf("A's call %d: %v %v, want input_required", i, res, err)
		}
		if i == 0 {
			first = res
		}
	}
	// Then A floods: its parked calls beyond its share are refused, and
	// none of this keeps B out.
	var wg sync.WaitGroup
	floods := 3 * gateway.DefaultMaxParkedPerCaller
	refused := make(chan error, floods)
	for range floods {
		wg.Go(func() {
			res, err := callTool(ctx, a, "ask", exactjson.Object())
			if err != nil {
				refused <- err
			} else if str(res, "resultType") != "input_required" {
				t.Errorf("A's flood: %s", res)
			}
		})
	}
	wg.Wait()
	close(refused)
	n := 0
	for err := range refused {
		n++
		if !strings.Contains(err.Error(), "waiting for input") && rpcCode(err) != gateway.CodeUpstreamUnavailable {
			t.Errorf("A's refused call: %v, want it to say too many calls are waiting for input, or that no process was free", err)
		}
	}
	if n == 0 && floods > 0 {
		t.Errorf("A parked %d calls: none refused beyond its share of %d", cap(refused)+parks, gateway.DefaultMaxParkedPerCaller)
	}

	// B is served: a call needing no input,
	res, err := callTool(ctx, b, "echo", exactjson.Object(exactjson.Field("x", exactjson.Int(1))))
	if err != nil || !strings.Contains(res.String(), `{\"x\":1}`) {
		t.Fatalf("B's echo: %v %v, want its arguments back", res, err)
	}
	// and one asking for input twice, retried each time.
	res, err = callTool(ctx, b, "ask", exactjson.Object())
	res, err = answerRounds(ctx, b, "bob", res, err)
	if err != nil || strings.Count(res.String(), "bob-elicit-") != 2 {
		t.Fatalf("B's ask: %v %v, want B's own two answers", res, err)
	}
	// A's first parked call, on the process its flood shared, still gets
	// A's answers, and only A's.
	res, err = answerRounds(ctx, a, "alice", first, nil)
	if err != nil || strings.Count(res.String(), "alice-elicit-") != 2 || strings.Contains(res.String(), "bob") {
		t.Fatalf("A's first ask, retried: %v %v, want A's own two answers", res, err)
	}
}

// answerRounds answers every round of the call of the tool "ask" whose
// first outcome is res, err, with who's answers, and returns the last.
func answerRounds(ctx context.Context, c *client.Client, who string, res exactjson.Value, err error) (exactjson.Value, error) {
	for round := 0; err == nil && str(res, "resultType") == "input_required"; round++ {
		if round > 2 {
			return res, fmt.Errorf("round %d: %s", round, res)
		}
		reqs, _ := res.Get("inputRequests")
		state, _ := res.Get("requestState")
		var answers []exactjson.Member
		for _, m := range reqs.Members() {
			answers = append(answers, exactjson.Field(m.Name, exactjson.Object(exactjson.Field("action", exactjson.String("accept")),
				exactjson.Field("content", exactjson.Object(exactjson.Field("answer", exactjson.String(who+"-"+m.Name)))))))
		}
		res, err = c.Call(ctx, "tools/call", exactjson.Object(
			exactjson.Field("name", exactjson.String("ask")), exactjson.Field("arguments", exactjson.Object()),
			exactjson.Field("inputResponses", exactjson.Object(answers...)), exactjson.Field("requestState", state)))
	}
	return res, err
}

// Working capacity is shared too: caller A flooding a 2025-era stdio
// upstream with calls that never end holds at most its share of the
// processes (MaxCallsPerCaller), and caller B's call is served meanwhile.
// (Without the share, A's calls held every process and B's call waited
// for one until callTimeout.)
func TestSlowCallsDoNotStarveOtherCallers(t *testing.T) {
	t.Run("bearer", func(t *testing.T) {
		slowCallsDoNotStarve(t, tokenAdmission, func(in *instance, name string) *client.Client { return callerClient(t, in, name) })
	})
	// Without admission every caller is anonymous: the gateway tells them
	// apart by address as the server does (weft.Request.Caller); before,
	// all anonymous callers were one caller and B waited behind A.
	t.Run("anonymous", func(t *testing.T) {
		slowCallsDoNotStarve(t, nil, func(in *instance, name string) *client.Client { return addrClient(t, in, name) })
	})
}

// addrClient is a 2026-07-28 client of the gateway whose connections come
// from a loopback address of its own: "alice" from 127.0.0.2, "bob" from
// 127.0.0.3 (Linux routes all of 127/8 to the loopback interface).
func addrClient(t *testing.T, in *instance, name string) *client.Client {
	t.Helper()
	ip := net.IPv4(127, 0, 0, 2)
	if name == "bob" {
		ip = net.IPv4(127, 0, 0, 3)
	}
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: ip}}
	tr := &http.Transport{DialContext: d.DialContext}
	t.Cleanup(tr.CloseIdleConnections)
	c := client.New(client.NewHTTPTransport(in.url, &client.HTTPOptions{Client: &http.Client{Transport: tr}}), nil)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func slowCallsDoNotStarve(t *testing.T, adm weft.Admission, newClient func(*instance, string) *client.Client) {
	up, _ := fakeUpstream(t, "fake")
	up.MaxProcesses = 2
	up.CallTimeout = gateway.Duration(time.Minute)
	in := startGatewayAdmitting(t, &gateway.Config{Upstreams: []gateway.UpstreamConfig{up}}, testKeyring(t), nil, adm)
	a, b := newClient(in, "alice"), newClient(in, "bob")
	actx, stopA := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(wg.Wait)
	t.Cleanup(stopA)
	for range 6 {
		wg.Go(func() { _, _ = callTool(actx, a, "hang", exactjson.Object()) })
	}
	waitFor(t, "A's calls to hold their share", func() bool { return in.gw.Running("fake") >= 1 })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := callTool(ctx, b, "echo", exactjson.Object(exactjson.Field("x", exactjson.Int(2))))
	if err != nil || !strings.Contains(res.String(), `{\"x\":2}`) {
		t.Fatalf("B's echo: %v %v, want its arguments back", res, err)
	}
}

// A server request of a call the gateway gave up on never reaches another
// caller's call. A's call "stray" runs on the process where A's first call
// waits for input, asks for input itself and is refused (past
// maxParkedPerCaller) and cancelled; the server asks its question again
// during the next echo on that process. B's echo runs on another process,
// so it sees none of it. (Before, B's echo took the free process where A's
// calls were, and got A's stray question as its own input request.)
func TestStrayRequestReachesNoOtherCaller(t *testing.T) {
	up, log := fakeUpstream(t, "fake")
	up.MaxProcesses = 2
	up.MaxCallsPerCaller = 1
	up.MaxParkedPerCaller = 1
	in := startGatewayAdmitting(t, &gateway.Config{Upstreams: []gateway.UpstreamConfig{up}}, testKeyring(t), nil, tokenAdmission)
	a, b := callerClient(t, in, "alice"), callerClient(t, in, "bob")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	first, err := callTool(ctx, a, "ask", exactjson.Object())
	if err != nil || str(first, "resultType") != "input_required" {
		t.Fatalf("A's ask: %v %v, want input_required", first, err)
	}
	if _, err := callTool(ctx, a, "stray", exactjson.Object()); err == nil || !strings.Contains(err.Error(), "maxParkedPerCaller") {
		t.Fatalf("A's stray call: %v, want it refused past maxParkedPerCaller", err)
	}
	waitFor(t, "the server to learn its stray call was refused", func() bool { return strings.Contains(readLog(t, log), "stray refused") })

	res, err := callTool(ctx, b, "echo", exactjson.Object(exactjson.Field("x", exactjson.Int(3))))
	if err != nil || str(res, "resultType") == "input_required" || !strings.Contains(res.String(), `{\"x\":3}`) {
		t.Fatalf("B's echo: %v %v, want its arguments back and no input request", res, err)
	}
	// A's first call still completes with A's answers, on its process.
	res, err = answerRounds(ctx, a, "alice", first, nil)
	if err != nil || strings.Count(res.String(), "alice-elicit-") != 2 {
		t.Fatalf("A's first ask, retried: %v %v, want A's own two answers", res, err)
	}
	// Its process, tainted by the refused call, is closed with it: the
	// next echo, A's, runs on a process with no stray question pending.
	waitFor(t, "the tainted process to go", func() bool { return strings.Count(readLog(t, log), "eof") >= 1 })
	res, err = callTool(ctx, a, "echo", exactjson.Object(exactjson.Field("x", exactjson.Int(4))))
	if err != nil || !strings.Contains(res.String(), `{\"x\":4}`) {
		t.Fatalf("A's echo: %v %v, want its arguments back", res, err)
	}
	if l := readLog(t, log); strings.Contains(l, "stray answered") {
		t.Fatalf("the stray question reached a call:\n%s", l)
	}
}
