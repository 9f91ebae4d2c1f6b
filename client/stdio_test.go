package client

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weftmcp/weft/exactjson"
)

// pipeServer plays the server side of a StdioTransport over in-process
// pipes: the test writes its lines and reads what the client sends.
type pipeServer struct {
	t     *testing.T
	tr    *StdioTransport
	sw    io.WriteCloser
	lines chan string
}

func newPipeServer(t *testing.T, opts *StdioOptions) *pipeServer {
	t.Helper()
	cr, sw := io.Pipe() // server → client
	sr, cw := io.Pipe() // client → server
	p := &pipeServer{t: t, tr: NewStdioTransport(cr, cw, opts), sw: sw, lines: make(chan string, 64)}
	go func() {
		defer close(p.lines)
		br := bufio.NewReader(sr)
		for {
			l, err := br.ReadString('\n')
			if err != nil {
				return
			}
			p.lines <- strings.TrimSuffix(l, "\n")
		}
	}()
	t.Cleanup(func() {
		_ = p.tr.Close()
		_ = sw.Close()
		_ = sr.Close()
	})
	return p
}

// send writes one line to the client. The reader blocks while the
// transport is broken, so a failed write does not fail the test.
func (p *pipeServer) send(line string) {
	go func() { _, _ = fmt.Fprintln(p.sw, line) }()
}

// sendSync writes one line and waits until the transport has read it. A
// transport that stops reading (it broke) fails the test.
func (p *pipeServer) sendSync(line string) {
	p.t.Helper()
	written := make(chan error, 1)
	go func() {
		_, err := fmt.Fprintln(p.sw, line)
		written <- err
	}()
	select {
	case err := <-written:
		if err != nil {
			p.t.Fatalf("writing %q: %v", line, err)
		}
	case <-time.After(10 * time.Second):
		p.t.Fatalf("the transport does not read %q (its error: %v)", line, p.tr.Err())
	}
}

// next returns the next line the client wrote.
func (p *pipeServer) next() string {
	p.t.Helper()
	select {
	case l, ok := <-p.lines:
		if !ok {
			p.t.Fatal("the client's output ended")
		}
		return l
	case <-time.After(10 * time.Second):
		p.t.Fatal("no line from the client")
	}
	return ""
}

// pipeCall is one request in flight of a test.
type pipeCall struct {
	token  bool // carries _meta progressToken = its id
	listen bool // has a notify function
	hook   bool // has OnServerRequest
	away   bool // Attending reports false
}

type callResult struct {
	resp  *Response
	err   error
	notes []string
}

// startCalls starts the calls (ids 1..n) and waits until the server has
// read each of them.
func (p *pipeServer) startCalls(ctx context.Context, calls []pipeCall, hook func(id int64) func(context.Context, string, exactjson.Value) (exactjson.Value, error)) []chan callResult {
	p.t.Helper()
	out := make([]chan callResult, len(calls))
	for i, c := range calls {
		id := int64(i + 1)
		req := &Request{ID: id, Method: "tools/call", Params: exactjson.Object()}
		if c.token {
			req.Params = exactjson.Object(exactjson.Field("_meta", exactjson.Object(exactjson.Field("progressToken", exactjson.Int(id)))))
		}
		if c.hook {
			req.OnServerRequest = hook(id)
		}
		if c.away {
			req.Attending = func() bool { return false }
		}
		ch := make(chan callResult, 1)
		out[i] = ch
		go func() {
			var r callResult
			var notify func(Notification)
			if c.listen {
				notify = func(n Notification) { r.notes = append(r.notes, n.Method) }
			}
			r.resp, r.err = p.tr.Do(ctx, req, notify)
			ch <- r
		}()
		if l := p.next(); !strings.Contains(l, fmt.Sprintf(`"id":%d,"method":"tools/call"`, id)) {
			p.t.Fatalf("request line %s", l)
		}
	}
	return out
}

// finish answers calls 1..n and returns their results.
func (p *pipeServer) finish(calls []chan callResult) []callResult {
	p.t.Helper()
	out := make([]callResult, len(calls))
	for i, ch := range calls {
		p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{}}`, i+1))
		select {
		case out[i] = <-ch:
		case <-time.After(10 * time.Second):
			p.t.Fatalf("call %d did not end", i+1)
		}
		if out[i].err != nil {
			p.t.Fatalf("call %d: %v", i+1, out[i].err)
		}
	}
	return out
}

func TestStdioServerRequests(t *testing.T) {
	hook := func(id int64) func(context.Context, string, exactjson.Value) (exactjson.Value, error) {
		return func(_ context.Context, method string, params exactjson.Value) (exactjson.Value, error) {
			switch method {
			case "roots/list":
				return exactjson.Value{}, &RPCError{Code: CodeMethodNotFound, Message: "no roots", Data: exactjson.String("d")}
			case "sampling/createMessage":
				return exactjson.Value{}, errors.New("no model")
			}
			q, _ := params.Get("q")
			return exactjson.Object(exactjson.Field("by", exactjson.Int(id)), exactjson.Field("q", q)), nil
		}
	}
	tests := []struct {
		name  string
		calls []pipeCall
		req   string // the server request, id "s"
		want  string // the client's answer
	}{
		{"the echoed token picks its call", []pipeCall{{token: true, hook: true}, {token: true, hook: true}},
			`{"jsonrpc":"2.0","id":"s","method":"elicitation/create","params":{"q":1,"_meta":{"progressToken":2}}}`,
			`{"jsonrpc":"2.0","id":"s","result":{"by":2,"q":1}}`},
		{"the only call with a hook", []pipeCall{{token: true, listen: true}, {hook: true}, {listen: true}},
			`{"jsonrpc":"2.0","id":"s","method":"elicitation/create","params":{"q":"x"}}`,
			`{"jsonrpc":"2.0","id":"s","result":{"by":2,"q":"x"}}`},
		{"an unknown echoed token falls back to the only hook", []pipeCall{{hook: true}},
			`{"jsonrpc":"2.0","id":7,"method":"elicitation/create","params":{"q":2,"_meta":{"progressToken":99}}}`,
			`{"jsonrpc":"2.0","id":7,"result":{"by":1,"q":2}}`},
		{"two hooks and no token", []pipeCall{{hook: true}, {hook: true}},
			`{"jsonrpc":"2.0","id":"s","method":"elicitation/create","params":{}}`,
			`{"jsonrpc":"2.0","id":"s","error":{"code":-32603,"message":"client: no single request in flight answers elicitation/create"}}`},
		{"two hooks, one attending", []pipeCall{{hook: true, away: true}, {hook: true}, {hook: true, away: true}},
			`{"jsonrpc":"2.0","id":"s","method":"elicitation/create","params":{"q":3}}`,
			`{"jsonrpc":"2.0","id":"s","result":{"by":2,"q":3}}`},
		{"no hook attending", []pipeCall{{hook: true, away: true}},
			`{"jsonrpc":"2.0","id":"s","method":"elicitation/create","params":{}}`,
			`{"jsonrpc":"2.0","id":"s","error":{"code":-32603,"message":"client: no single request in flight answers elicitation/create"}}`},
		{"the echoed token names a call that is away", []pipeCall{{token: true, hook: true, away: true}, {hook: true}},
			`{"jsonrpc":"2.0","id":"s","method":"elicitation/create","params":{"q":4,"_meta":{"progressToken":1}}}`,
			`{"jsonrpc":"2.0","id":"s","result":{"by":1,"q":4}}`},
		{"the echoed call has no hook", []pipeCall{{token: true, listen: true}, {token: true, hook: true}},
			`{"jsonrpc":"2.0","id":"s","method":"elicitation/create","params":{"_meta":{"progressToken":1}}}`,
			`{"jsonrpc":"2.0","id":"s","error":{"code":-32603,"message":"client: no single request in flight answers elicitation/create"}}`},
		{"no call in flight", nil,
			`{"jsonrpc":"2.0","id":"s","method":"roots/list"}`,
			`{"jsonrpc":"2.0","id":"s","error":{"code":-32603,"message":"client: no single request in flight answers roots/list"}}`},
		{"ping needs no hook", []pipeCall{{listen: true}},
			`{"jsonrpc":"2.0","id":"p","method":"ping"}`,
			`{"jsonrpc":"2.0","id":"p","result":{}}`},
		{"the hook's RPCError is sent as it is", []pipeCall{{hook: true}},
			`{"jsonrpc":"2.0","id":"s","method":"roots/list","params":{}}`,
			`{"jsonrpc":"2.0","id":"s","error":{"code":-32601,"message":"no roots","data":"d"}}`},
		{"another error of the hook is an internal error", []pipeCall{{hook: true}},
			`{"jsonrpc":"2.0","id":"s","method":"sampling/createMessage","params":{}}`,
			`{"jsonrpc":"2.0","id":"s","error":{"code":-32603,"message":"no model"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			p := newPipeServer(t, nil)
			calls := p.startCalls(ctx, tt.calls, hook)
			p.send(tt.req)
			if got := p.next(); got != tt.want {
				t.Errorf("answer\n got %s\nwant %s", got, tt.want)
			}
			p.finish(calls)
		})
	}
}

// TestStdioServerRequestContext checks that a hook's context ends when the
// server cancels the request, when the call ends, and when the transport
// closes.
func TestStdioServerRequestContext(t *testing.T) {
	tests := []struct {
		name   string
		end    func(p *pipeServer)
		answer string // the client's answer ("" when the transport is gone)
	}{
		{"the server cancels", func(p *pipeServer) {
			p.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"s","reason":"enough"}}`)
		}, `{"jsonrpc":"2.0","id":"s","error":{"code":-32603,"message":"context canceled"}}`},
		{"the call ends", func(p *pipeServer) {
			p.send(`{"jsonrpc":"2.0","id":1,"result":{}}`)
		}, `{"jsonrpc":"2.0","id":"s","error":{"code":-32603,"message":"context canceled"}}`},
		{"the transport closes", func(p *pipeServer) { _ = p.tr.Close() }, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			p := newPipeServer(t, nil)
			started, ended := make(chan struct{}), make(chan error, 1)
			hook := func(int64) func(context.Context, string, exactjson.Value) (exactjson.Value, error) {
				return func(ctx context.Context, _ string, _ exactjson.Value) (exactjson.Value, error) {
					close(started)
					<-ctx.Done()
					ended <- ctx.Err()
					return exactjson.Value{}, ctx.Err()
				}
			}
			calls := p.startCalls(ctx, []pipeCall{{hook: true}}, hook)
			p.send(`{"jsonrpc":"2.0","id":"s","method":"elicitation/create","params":{}}`)
			select {
			case <-started:
			case <-ctx.Done():
				t.Fatal("the hook did not run")
			}
			tt.end(p)
			select {
			case err := <-ended:
				if !errors.Is(err, context.Canceled) {
					t.Errorf("hook context ended with %v", err)
				}
			case <-ctx.Done():
				t.Fatal("the hook's context did not end")
			}
			if tt.answer != "" {
				if got := p.next(); got != tt.answer {
					t.Errorf("answer\n got %s\nwant %s", got, tt.answer)
				}
				p.send(`{"jsonrpc":"2.0","id":1,"result":{}}`) // the call may still wait
			}
			select {
			case <-calls[0]:
			case <-ctx.Done():
				t.Fatal("the call did not end")
			}
		})
	}
}

func TestStdioNotificationRouting(t *testing.T) {
	const unrouted = 0
	tests := []struct {
		name  string
		calls []pipeCall
		note  string
		want  int // the call (1-based) that receives it, or unrouted
	}{
		{"progress by its token", []pipeCall{{token: true, listen: true}, {token: true, listen: true}},
			`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":2,"progress":1}}`, 2},
		{"progress of an unknown token", []pipeCall{{token: true, listen: true}},
			`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":9,"progress":1}}`, unrouted},
		{"by subscriptionId", []pipeCall{{listen: true}, {listen: true}},
			`{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":1}}}`, 1},
		{"an unknown subscriptionId", []pipeCall{{listen: true}},
			`{"jsonrpc":"2.0","method":"notifications/message","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":5}}}`, unrouted},
		{"a list change without subscription", []pipeCall{{listen: true}},
			`{"jsonrpc":"2.0","method":"notifications/prompts/list_changed"}`, unrouted},
		{"a resource update without subscription", []pipeCall{{listen: true}},
			`{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"x:/a"}}`, unrouted},
		{"an echoed token", []pipeCall{{token: true, listen: true}, {token: true, listen: true}},
			`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","_meta":{"progressToken":1}}}`, 1},
		{"the only listening call", []pipeCall{{}, {listen: true}, {hook: true}},
			`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info"}}`, 2},
		{"two listening calls", []pipeCall{{listen: true}, {listen: true}},
			`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info"}}`, unrouted},
		{"no listening call", []pipeCall{{}},
			`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info"}}`, unrouted},
	}
	noHook := func(int64) func(context.Context, string, exactjson.Value) (exactjson.Value, error) {
		return func(context.Context, string, exactjson.Value) (exactjson.Value, error) {
			return exactjson.Object(), nil
		}
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			p := newPipeServer(t, nil)
			var mu sync.Mutex
			var lost []string
			p.tr.SetUnroutedHandler(func(n Notification) {
				mu.Lock()
				lost = append(lost, n.Method)
				mu.Unlock()
			})
			calls := p.startCalls(ctx, tt.calls, noHook)
			p.sendSync(tt.note)
			// The responses follow the notification on the same stream:
			// when the calls have ended it has been routed.
			res := p.finish(calls)
			_, want, _ := strings.Cut(tt.note, `"method":"`)
			want, _, _ = strings.Cut(want, `"`)
			for i, r := range res {
				got := strings.Join(r.notes, ",")
				if i+1 == tt.want && got != want || i+1 != tt.want && got != "" {
					t.Errorf("call %d received %q", i+1, got)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if got := strings.Join(lost, ","); tt.want == unrouted && got != want || tt.want != unrouted && got != "" {
				t.Errorf("unrouted handler received %q", got)
			}
		})
	}
}

// TestStdioStrictFraming checks the lines that break the transport: every
// one of them by default, and those that are no noise (the server speaking
// JSON-RPC wrongly) with a noise handler too, which then sees none of them.
func TestStdioStrictFraming(t *testing.T) {
	tests := []struct {
		name  string
		line  string
		noise bool // skipped with a noise handler
	}{
		{"not JSON", "hello from a print statement", true},
		{"not an object", `[1,2]`, true},
		{"no jsonrpc member", `{"id":1,"result":{}}`, true},
		{"jsonrpc 1.0", `{"jsonrpc":"1.0","id":1,"result":{}}`, false},
		{"jsonrpc a number", `{"jsonrpc":2,"id":1,"result":{}}`, false},
		{"an empty method", `{"jsonrpc":"2.0","method":""}`, false},
		{"a response without id", `{"jsonrpc":"2.0","result":{}}`, false},
		{"neither result nor error", `{"jsonrpc":"2.0","id":1}`, false},
		{"a message cut short", `{"jsonrpc":"2.0","id":1,"result":{"content":[`, false},
		{"a message with invalid UTF-8", "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"t\":\"\xff\"}}", false},
		{"a batch", `[{"jsonrpc":"2.0","id":1,"result":{}}]`, false},
	}
	for _, tt := range tests {
		for _, handler := range []bool{false, true} {
			if handler && tt.noise {
				continue
			}
			name := tt.name
			if handler {
				name += "/with a noise handler"
			}
			t.Run(name, func(t *testing.T) {
				var opts StdioOptions
				if handler {
					opts.Noise = func(line []byte) { t.Errorf("noise handler called with %q", line) }
				}
				strictLine(t, newPipeServer(t, &opts), tt.line)
			})
		}
	}
}

// strictLine checks that line breaks p's transport: its call in flight
// fails with an error quoting the line, and so does every later one.
func strictLine(t *testing.T, p *pipeServer, line string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	calls := p.startCalls(ctx, []pipeCall{{listen: true}}, nil)
	p.send(line)
	var r callResult
	select {
	case r = <-calls[0]:
	case <-ctx.Done():
		t.Fatal("the call still waits after a broken line")
	}
	if !errors.Is(r.err, ErrClosed) || !errors.Is(r.err, ErrProtocol) || !strings.Contains(r.err.Error(), "not a JSON-RPC message") {
		t.Fatalf("err = %v, want ErrClosed and ErrProtocol", r.err)
	}
	if q := fmt.Sprintf("%q", strings.TrimSuffix(line, "\r")); len(line) <= 120 && !strings.Contains(r.err.Error(), q) {
		t.Errorf("err = %v does not quote the line %s", r.err, q)
	}
	select {
	case <-p.tr.Done():
	default:
		t.Error("Done is not closed")
	}
	if err := p.tr.Err(); err == nil || err.Error() != r.err.Error() {
		t.Errorf("Err() = %v, want %v", err, r.err)
	}
	if _, err := p.tr.Do(ctx, &Request{ID: 2, Method: "ping"}, nil); err == nil || err.Error() != r.err.Error() {
		t.Errorf("a later request: %v", err)
	}
}

// TestStdioLenientWithinFraming checks what does not break the transport:
// blank lines, and a result that is not an object (it fails its request at
// the Client, not the connection).
func TestStdioLenientWithinFraming(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p := newPipeServer(t, nil)
	calls := p.startCalls(ctx, []pipeCall{{}}, nil)
	p.sendSync("")
	p.sendSync("  \r")
	p.sendSync(`{"jsonrpc":"2.0","id":1,"result":[]}`)
	r := <-calls[0]
	if r.err != nil || r.resp.Result.Kind() != exactjson.KindArray {
		t.Fatalf("call: %+v", r)
	}
	if p.tr.Err() != nil {
		t.Fatalf("transport broke: %v", p.tr.Err())
	}
	c := New(p.tr, &Options{ProtocolVersion: ProtocolVersion})
	done := make(chan error, 1)
	go func() { _, err := c.Call(ctx, "ping", nil); done <- err }()
	l := p.next()
	id := l[strings.Index(l, `"id":`)+5 : strings.Index(l, `,"method"`)]
	p.send(`{"jsonrpc":"2.0","id":` + id + `,"result":"x"}`)
	if err := <-done; !errors.Is(err, ErrProtocol) {
		t.Errorf("Call with a string result: %v, want ErrProtocol", err)
	}
	if p.tr.Err() != nil {
		t.Fatalf("transport broke: %v", p.tr.Err())
	}
}

// TestStdioServerRequestAfterNotifications checks that a server request
// reaches its hook after the notifications the server sent before it.
func TestStdioServerRequestAfterNotifications(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p := newPipeServer(t, nil)
	var mu sync.Mutex
	var events []string
	req := &Request{ID: 1, Method: "tools/call", Params: exactjson.Object(),
		OnServerRequest: func(_ context.Context, method string, _ exactjson.Value) (exactjson.Value, error) {
			mu.Lock()
			events = append(events, method)
			mu.Unlock()
			return exactjson.Object(), nil
		}}
	done := make(chan error, 1)
	go func() {
		_, err := p.tr.Do(ctx, req, func(n Notification) {
			mu.Lock()
			events = append(events, n.Method)
			mu.Unlock()
		})
		done <- err
	}()
	p.next()
	for i := range 20 {
		p.sendSync(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":` + fmt.Sprint(i) + `}}`)
	}
	p.sendSync(`{"jsonrpc":"2.0","id":"s","method":"elicitation/create","params":{}}`)
	if got, want := p.next(), `{"jsonrpc":"2.0","id":"s","result":{}}`; got != want {
		t.Errorf("answer %s, want %s", got, want)
	}
	p.send(`{"jsonrpc":"2.0","id":1,"result":{}}`)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(events) != 21 || events[20] != "elicitation/create" {
		t.Errorf("events %q: the request is not last", events)
	}
}

func TestStdioNotify(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p := newPipeServer(t, nil)
	tests := []struct {
		method string
		params exactjson.Value
		want   string
	}{
		{"notifications/initialized", exactjson.Object(), `{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`},
		{"notifications/roots/list_changed", exactjson.Value{}, `{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}`},
	}
	for _, tt := range tests {
		if err := p.tr.Notify(ctx, tt.method, tt.params); err != nil {
			t.Fatalf("Notify(%s): %v", tt.method, err)
		}
		if got := p.next(); got != tt.want {
			t.Errorf("line %s, want %s", got, tt.want)
		}
	}
	_ = p.tr.Close()
	if err := p.tr.Notify(ctx, "notifications/initialized", exactjson.Object()); !errors.Is(err, ErrClosed) {
		t.Errorf("Notify after Close: %v, want ErrClosed", err)
	}
}

// noiseLines are lines servers print on stdout besides their messages, as
// written and as the noise handler gets them (without the line terminator).
var noiseLines = []struct{ written, got string }{
	{"Weather server v1.2 running on stdio", "Weather server v1.2 running on stdio"},
	{`{"level":30,"time":1764900000000,"pid":7,"msg":"listening"}`, `{"level":30,"time":1764900000000,"pid":7,"msg":"listening"}`},
	{`{"level":"error","error":"cache miss","id":"req-3"}`, `{"level":"error","error":"cache miss","id":"req-3"}`},
	{"WARNING: config file not found\r", "WARNING: config file not found"},
	{"42", "42"},
	{`"done"`, `"done"`},
	{"null", "null"},
	{"[1, 2, 3]", "[1, 2, 3]"},
	{`[{"level":1}]`, `[{"level":1}]`},
	{"caf\xe9 (Latin-1)", "caf\xe9 (Latin-1)"},
	{"  {unbalanced", "  {unbalanced"},
}

// noiseRecorder is a noise handler that records the lines it gets.
type noiseRecorder struct {
	mu    sync.Mutex
	lines []string
}

func (r *noiseRecorder) handle(line []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lines = append(r.lines, string(line))
}

func (r *noiseRecorder) got() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.lines)
}

// TestStdioNoise checks that a noise handler gets the lines that are no
// JSON-RPC messages, in order, wherever the server writes them, and that
// the calls around them succeed; without one each of them breaks the
// transport.
func TestStdioNoise(t *testing.T) {
	var want []string
	for _, n := range noiseLines {
		want = append(want, n.got)
	}
	noise := func(p *pipeServer) {
		for _, n := range noiseLines {
			p.sendSync(n.written)
		}
	}
	answer := func(p *pipeServer, id int) {
		p.sendSync(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{"n":%d}}`, id, id))
	}
	tests := []struct {
		name  string
		calls []pipeCall
		// script writes the server's lines once the calls are in flight;
		// before writes the server's lines before any call.
		before func(p *pipeServer)
		script func(p *pipeServer)
		notes  [][]string // the notifications each call gets
	}{
		{
			name:   "a banner before the first answer",
			calls:  []pipeCall{{}},
			before: noise,
			script: func(p *pipeServer) { answer(p, 1) },
		},
		{
			name:  "noise before an answer",
			calls: []pipeCall{{}},
			script: func(p *pipeServer) {
				noise(p)
				answer(p, 1)
			},
		},
		{
			name:  "noise between answers",
			calls: []pipeCall{{}, {}},
			script: func(p *pipeServer) {
				answer(p, 2)
				noise(p)
				answer(p, 1)
			},
		},
		{
			name:  "noise among notifications with calls in flight",
			calls: []pipeCall{{token: true, listen: true}, {token: true, listen: true}, {}},
			script: func(p *pipeServer) {
				p.sendSync(noiseLines[0].written)
				p.sendSync(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":2,"progress":1}}`)
				for _, n := range noiseLines[1:5] {
					p.sendSync(n.written)
				}
				answer(p, 3)
				p.sendSync(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}`)
				for _, n := range noiseLines[5:] {
					p.sendSync(n.written)
				}
				answer(p, 1)
				answer(p, 2)
			},
			notes: [][]string{{"notifications/progress"}, {"notifications/progress"}, nil},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			var rec noiseRecorder
			p := newPipeServer(t, &StdioOptions{Noise: rec.handle})
			if tt.before != nil {
				tt.before(p)
			}
			calls := p.startCalls(ctx, tt.calls, nil)
			tt.script(p)
			for i, ch := range calls {
				var r callResult
				select {
				case r = <-ch:
				case <-ctx.Done():
					t.Fatalf("call %d did not end", i+1)
				}
				if r.err != nil {
					t.Fatalf("call %d: %v", i+1, r.err)
				}
				if n, _ := r.resp.Result.Get("n"); n.String() != fmt.Sprint(i+1) {
					t.Errorf("call %d got the result %s", i+1, r.resp.Result.String())
				}
				if tt.notes != nil && !slices.Equal(r.notes, tt.notes[i]) {
					t.Errorf("call %d got the notifications %q, want %q", i+1, r.notes, tt.notes[i])
				}
			}
			// Every line before the last answer was handled before it.
			if got := rec.got(); !slices.Equal(got, want) {
				t.Errorf("noise handler got %q\nwant %q", got, want)
			}
			if err := p.tr.Err(); err != nil {
				t.Fatalf("the transport broke: %v", err)
			}
		})
	}
	for _, n := range noiseLines {
		t.Run("without a handler/"+n.got, func(t *testing.T) {
			strictLine(t, newPipeServer(t, nil), n.written)
		})
	}
}

// TestStdioNoiseBounds checks that a noise handler does not make the
// transport take what it cannot read safely: a line over its bound, or
// JSON over the parse limits (an answer too big to take, maybe).
func TestStdioNoiseBounds(t *testing.T) {
	tests := []struct {
		name string
		line string
		want string
	}{
		{"a line over the bound", strings.Repeat("x", 1001), "line exceeds 1000 bytes"},
		{"JSON too deep", strings.Repeat("[", 200) + strings.Repeat("]", 200), "exceeds MaxDepth"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			var rec noiseRecorder
			p := newPipeServer(t, &StdioOptions{Noise: rec.handle, maxLine: 1000})
			calls := p.startCalls(ctx, []pipeCall{{}}, nil)
			p.send(tt.line)
			var r callResult
			select {
			case r = <-calls[0]:
			case <-ctx.Done():
				t.Fatal("the call still waits")
			}
			if !errors.Is(r.err, ErrClosed) || !errors.Is(r.err, ErrProtocol) || !strings.Contains(r.err.Error(), tt.want) {
				t.Fatalf("err = %v, want ErrClosed, ErrProtocol and %q", r.err, tt.want)
			}
			if got := rec.got(); len(got) > 0 {
				t.Errorf("noise handler got %q", got)
			}
		})
	}
}

// withMaxLine bounds the lines the transport reads.

// The caller cancels a request whose server request is being answered: the
// server reads notifications/cancelled before the answer that ends with
// the cancellation, so it cannot mistake the error answer for the user's
// and finish the request on it first.
func TestStdioCancelBeforeServerRequestAnswer(t *testing.T) {
	for i := range 20 { // the order used to depend on scheduling
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			p := newPipeServer(t, nil)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			started := make(chan struct{})
			hook := func(int64) func(context.Context, string, exactjson.Value) (exactjson.Value, error) {
				return func(ctx context.Context, _ string, _ exactjson.Value) (exactjson.Value, error) {
					close(started)
					<-ctx.Done()
					return exactjson.Value{}, ctx.Err()
				}
			}
			calls := p.startCalls(ctx, []pipeCall{{hook: true}}, hook)
			p.send(`{"jsonrpc":"2.0","id":"s","method":"elicitation/create","params":{}}`)
			<-started
			cancel()
			first, second := p.next(), p.next()
			if !strings.Contains(first, `"method":"notifications/cancelled"`) || !strings.Contains(first, `"requestId":1`) {
				t.Fatalf("first line after the cancellation: %s, want notifications/cancelled of request 1 (then %s)", first, second)
			}
			if !strings.HasPrefix(second, `{"jsonrpc":"2.0","id":"s","error":`) {
				t.Fatalf("second line %s, want the server request's error answer", second)
			}
			if r := <-calls[0]; !errors.Is(r.err, context.Canceled) {
				t.Fatalf("call: %+v", r)
			}
		})
	}
}

// Closed right after a request's context ended, the transport still tells
// the server of the cancellation before its input ends (the gateway stops
// a process at once after a call the server did not answer).
func TestStdioCloseAfterCancelSendsIt(t *testing.T) {
	for i := range 20 { // the order used to depend on scheduling
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			p := newPipeServer(t, nil)
			ctx, cancel := context.WithCancel(context.Background())
			calls := p.startCalls(ctx, []pipeCall{{}}, nil) // the request is written
			cancel()
			if r := <-calls[0]; !errors.Is(r.err, context.Canceled) {
				t.Fatalf("call: %+v", r)
			}
			if err := p.tr.Close(); err != nil {
				t.Fatal(err)
			}
			var rest []string
			for l := range p.lines {
				rest = append(rest, l)
			}
			if len(rest) != 1 || !strings.Contains(rest[0], `"method":"notifications/cancelled"`) {
				t.Fatalf("after the cancellation and Close the server read %q, want notifications/cancelled", rest)
			}
		})
	}
}

// A server that keeps sending requests of its own without waiting for
// their answers breaks the transport at MaxServerRequests unanswered ones,
// instead of holding a goroutine and a hook for each.
func TestStdioServerRequestsBounded(t *testing.T) {
	p := newPipeServer(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var mu sync.Mutex
	running := 0
	hook := func(int64) func(context.Context, string, exactjson.Value) (exactjson.Value, error) {
		return func(ctx context.Context, _ string, _ exactjson.Value) (exactjson.Value, error) {
			mu.Lock()
			running++
			mu.Unlock()
			<-ctx.Done() // the user never answers
			return exactjson.Value{}, ctx.Err()
		}
	}
	calls := p.startCalls(ctx, []pipeCall{{hook: true}}, hook)
	for i := range MaxServerRequests {
		p.sendSync(fmt.Sprintf(`{"jsonrpc":"2.0","id":"s%d","method":"elicitation/create","params":{}}`, i))
	}
	if err := p.tr.Err(); err != nil {
		t.Fatalf("the transport broke at %d server requests: %v", MaxServerRequests, err)
	}
	p.send(`{"jsonrpc":"2.0","id":"over","method":"ping"}`)
	r := <-calls[0]
	if !errors.Is(r.err, ErrProtocol) || !errors.Is(r.err, ErrClosed) || !strings.Contains(r.err.Error(), "requests of its own") {
		t.Fatalf("call: %v, want the transport broken by the server's requests", r.err)
	}
	mu.Lock()
	defer mu.Unlock()
	if running > MaxServerRequests {
		t.Fatalf("%d hooks ran, more than %d", running, MaxServerRequests)
	}
}

// SetServerRequestHandler answers the server requests no request in flight
// claims; without it they get an error (TestStdioServerRequests).
func TestStdioServerRequestHandler(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p := newPipeServer(t, nil)
	p.tr.SetServerRequestHandler(func(_ context.Context, method string, _ exactjson.Value) (exactjson.Value, error) {
		if method == "roots/list" {
			return exactjson.Object(exactjson.Field("roots", exactjson.Array())), nil
		}
		return exactjson.Value{}, &RPCError{Code: CodeMethodNotFound, Message: "not outside a call"}
	})
	calls := p.startCalls(ctx, []pipeCall{{hook: true, away: true}}, func(int64) func(context.Context, string, exactjson.Value) (exactjson.Value, error) {
		return func(context.Context, string, exactjson.Value) (exactjson.Value, error) {
			return exactjson.Object(exactjson.Field("by", exactjson.String("call"))), nil
		}
	})
	for _, tc := range []struct{ req, want string }{
		{`{"jsonrpc":"2.0","id":"r","method":"roots/list"}`, `{"jsonrpc":"2.0","id":"r","result":{"roots":[]}}`},
		{`{"jsonrpc":"2.0","id":"e","method":"elicitation/create","params":{}}`, `{"jsonrpc":"2.0","id":"e","error":{"code":-32601,"message":"not outside a call"}}`},
	} {
		p.send(tc.req)
		if got := p.next(); got != tc.want {
			t.Errorf("answer\n got %s\nwant %s", got, tc.want)
		}
	}
	p.finish(calls)
}
