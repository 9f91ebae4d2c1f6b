package weft

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weftmcp/weft/exactjson"
	"github.com/weftmcp/weft/internal/syncbuf"
)

// stdioServerEnv makes the test binary act as a stdio MCP server (see
// TestMain): the stdio tests re-execute os.Args[0] as a real subprocess.
const stdioServerEnv = "WEFT_TEST_STDIO_SERVER"

func TestMain(m *testing.M) {
	if os.Getenv(stdioServerEnv) == "1" {
		os.Exit(runStdioServer())
	}
	os.Exit(m.Run())
}

// blocked holds the contexts of running "block" calls, by request id.
var blocked sync.Map

// runStdioServer serves a small server on stdin/stdout with the default
// logger (which writes to stderr).
func runStdioServer() int {
	s, err := NewServer(Implementation{Name: "stdio-test", Version: "1.0.0"}, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	type echoIn struct {
		Text string `json:"text"`
		N    int64  `json:"n"`
	}
	type echoOut struct {
		Echo string `json:"echo"`
		N    int64  `json:"n"`
	}
	var errs []error
	errs = append(errs, AddTool(s, Tool{Name: "echo", Description: "Echoes."}, func(ctx context.Context, req *Request, in echoIn) (echoOut, error) {
		slog.Info("stdio server log line", "tool", "echo") // must reach stderr, never stdout
		return echoOut{Echo: in.Text, N: in.N}, nil
	}))
	errs = append(errs, AddTool(s, Tool{Name: "progress", Description: "Reports progress."}, func(ctx context.Context, req *Request, _ noArgs) (*CallToolResult, error) {
		for _, p := range []float64{1, 2, 3} {
			if err := req.Progress(p, 3, ""); err != nil {
				return nil, err
			}
		}
		return textResult("progressed"), nil
	}))
	errs = append(errs, AddTool(s, Tool{Name: "block", Description: "Blocks until cancelled."}, func(ctx context.Context, req *Request, _ noArgs) (*CallToolResult, error) {
		blocked.Store(req.ID.String(), ctx)
		if err := req.Progress(1, 0, "started"); err != nil {
			return nil, err
		}
		<-ctx.Done()
		fmt.Fprintf(os.Stderr, "block %s cancelled: %v\n", req.ID, ctx.Err())
		return textResult("must never be sent"), nil
	}))
	type probeIn struct {
		ID exactjson.Value `json:"id"`
	}
	errs = append(errs, AddTool(s, Tool{Name: "probe", Description: "Reports a block call's state."}, func(ctx context.Context, req *Request, in probeIn) (*CallToolResult, error) {
		v, ok := blocked.Load(in.ID.String())
		switch {
		case !ok:
			return textResult("unknown"), nil
		case v.(context.Context).Err() != nil:
			return textResult("cancelled"), nil
		}
		return textResult("running"), nil
	}))
	if err := errors.Join(errs...); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	if err := s.ServeStdio(context.Background(), os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "ServeStdio:", err)
		return 1
	}
	return 0
}

// stdioProc is a running stdio server subprocess.
type stdioProc struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan []byte
	stderr *syncbuf.Buffer

	mu  sync.Mutex
	all [][]byte // every stdout line
}

func startStdio(t *testing.T) *stdioProc {
	t.Helper()
	exe, err := os.Executable()
	must(t, err)
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), stdioServerEnv+"=1")
	p := &stdioProc{t: t, cmd: cmd, lines: make(chan []byte, 64), stderr: &syncbuf.Buffer{}}
	cmd.Stderr = p.stderr
	p.stdin, err = cmd.StdinPipe()
	must(t, err)
	out, err := cmd.StdoutPipe()
	must(t, err)
	must(t, cmd.Start())
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	go func() {
		defer close(p.lines)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := bytes.Clone(sc.Bytes())
			p.mu.Lock()
			p.all = append(p.all, line)
			p.mu.Unlock()
			p.lines <- line
		}
	}()
	return p
}

func (p *stdioProc) send(b []byte) {
	p.t.Helper()
	if bytes.ContainsAny(b, "\n") {
		p.t.Fatalf("a message must be one line: %q", b)
	}
	if _, err := p.stdin.Write(append(b, '\n')); err != nil {
		p.t.Fatalf("write to the server: %v", err)
	}
}

func (p *stdioProc) call(id any, method string, params M) { p.send(body(p.t, id, method, params)) }

// next returns the next stdout message.
func (p *stdioProc) next() (rpcMsg, []byte) {
	p.t.Helper()
	select {
	case line, ok := <-p.lines:
		if !ok {
			p.t.Fatalf("stdout closed; stderr:\n%s", p.stderr.String())
		}
		var m rpcMsg
		if err := json.Unmarshal(line, &m); err != nil {
			p.t.Fatalf("stdout line is not JSON: %q", line)
		}
		return m, line
	case <-time.After(hangGuard):
		p.t.Fatalf("hang guard: no message from the server; stderr:\n%s", p.stderr.String())
	}
	return rpcMsg{}, nil
}

// response returns the next message, which must be the response to id.
func (p *stdioProc) response(id string) rpcMsg {
	p.t.Helper()
	m, line := p.next()
	if string(m.ID) != id || m.Method != "" {
		p.t.Fatalf("want the response to %s, got %s", id, line)
	}
	return m
}

func textOf(t testing.TB, m rpcMsg) string {
	t.Helper()
	return resp{Msg: m, Body: m.Result}.text(t)
}

func TestStdioSubprocess(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a subprocess")
	}
	p := startStdio(t)

	p.call(1, "server/discover", params(nil))
	res := decodeObj(t, p.response("1").Result)
	if res["resultType"] != "complete" || fmt.Sprint(res["supportedVersions"]) != "["+ProtocolVersion+"]" {
		t.Errorf("discover: %v", res)
	}

	p.call("two", "tools/call", toolCall(nil, "echo", M{"text": "héllo\nworld", "n": json.Number("9007199254740993")}))
	m := p.response(`"two"`)
	var echo struct {
		StructuredContent json.RawMessage `json:"structuredContent"`
	}
	must(t, json.Unmarshal(m.Result, &echo))
	if want := `{"echo":"héllo\nworld","n":9007199254740993}`; !jsonEqual(t, echo.StructuredContent, []byte(want)) || !strings.Contains(string(echo.StructuredContent), "9007199254740993") {
		t.Errorf("echo: %s", m.Result)
	}

	p.call(3, "tools/call", withMeta(toolCall(nil, "progress", nil), M{"progressToken": "p3"}))
	for i := 1; i <= 3; i++ {
		n, line := p.next()
		var pp struct {
			Token    string  `json:"progressToken"`
			Progress float64 `json:"progress"`
		}
		must(t, json.Unmarshal(n.Params, &pp))
		if n.Method != "notifications/progress" || n.ID != nil || pp.Token != "p3" || pp.Progress != float64(i) {
			t.Fatalf("progress %d: %s", i, line)
		}
	}
	if got := textOf(t, p.response("3")); got != "progressed" {
		t.Errorf("progress result %q", got)
	}

	p.send([]byte(`{"jsonrpc":"2.0","id":4,"method":`))
	m = p.response("null")
	if m.Error == nil || m.Error.Code != CodeParseError {
		t.Errorf("parse error line: %+v", m)
	}
	p.send([]byte(`{"jsonrpc":"2.0","id":4,"method":"nope","params":` + mustJSON(params(nil)) + `}`))
	if m = p.response("4"); m.Error == nil || m.Error.Code != CodeMethodNotFound {
		t.Errorf("unknown method: %+v", m)
	}

	// A blocked call, cancelled by notifications/cancelled.
	p.call(5, "tools/call", withMeta(toolCall(nil, "block", nil), M{"progressToken": 55}))
	if n, line := p.next(); n.Method != "notifications/progress" || !strings.Contains(string(n.Params), `"progressToken":55`) {
		t.Fatalf("block did not start: %s", line)
	}
	probe := func(id int) string {
		p.call(id, "tools/call", toolCall(nil, "probe", M{"id": json.Number("5")}))
		return textOf(t, p.response(fmt.Sprint(id)))
	}
	// The string "5" is another id than the integer 5.
	p.call(nil, "notifications/cancelled", params(M{"requestId": "5", "reason": "wrong kind"}))
	if got := probe(6); got != "running" {
		t.Fatalf("a cancellation of \"5\" affected request 5: %s", got)
	}
	// A cancellation without requestId and one for an unknown id are ignored.
	p.call(nil, "notifications/cancelled", params(nil))
	p.call(nil, "notifications/cancelled", params(M{"requestId": 404}))
	p.call(nil, "notifications/cancelled", params(M{"requestId": 5, "reason": "user pressed stop"}))
	if got := probe(7); got != "cancelled" {
		t.Fatalf("request 5 after its cancellation: %s", got)
	}

	// EOF: the server finishes and exits 0.
	must(t, p.stdin.Close())
	waited := make(chan error, 1)
	go func() { waited <- p.cmd.Wait() }()
	if err := waitFor(t, waited, "the server exiting on stdin EOF"); err != nil {
		t.Fatalf("exit: %v; stderr:\n%s", err, p.stderr.String())
	}
	for range p.lines {
		// drain
	}
	p.mu.Lock()
	all := p.all
	p.mu.Unlock()
	var ids []string
	for _, line := range all {
		var msg map[string]json.RawMessage
		if err := json.Unmarshal(line, &msg); err != nil {
			t.Fatalf("stdout holds a non-JSON line %q", line)
		}
		_, hasID := msg["id"]
		_, hasMethod := msg["method"]
		_, hasResult := msg["result"]
		_, hasError := msg["error"]
		switch {
		case string(msg["jsonrpc"]) != `"2.0"`:
			t.Errorf("not JSON-RPC 2.0: %s", line)
		case hasMethod && hasID:
			t.Errorf("the server sent a request: %s", line)
		case hasMethod:
		case hasID && hasResult != hasError:
			ids = append(ids, string(msg["id"]))
		default:
			t.Errorf("malformed message %s", line)
		}
	}
	if got := strings.Join(ids, " "); got != `1 "two" 3 null 4 6 7` {
		t.Errorf("responses to %s; request 5 must get none", got)
	}
	stderr := p.stderr.String()
	if !strings.Contains(stderr, "block 5 cancelled: context canceled") {
		t.Errorf("the handler did not see its cancellation; stderr:\n%s", stderr)
	}
	if !strings.Contains(stderr, "stdio server log line") {
		t.Errorf("logs must go to stderr; stderr:\n%s", stderr)
	}
}

// pipeStdio runs ServeStdio in process over pipes.
type pipeStdio struct {
	in   *io.PipeWriter
	out  *bufio.Reader
	done chan error
}

func startPipeStdio(t *testing.T, s *Server, ctx context.Context) *pipeStdio {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	p := &pipeStdio{in: inW, out: bufio.NewReader(outR), done: make(chan error, 1)}
	go func() {
		err := s.ServeStdio(ctx, inR, outW)
		outW.Close()
		p.done <- err
	}()
	t.Cleanup(func() { inW.Close(); outR.Close() })
	return p
}

func (p *pipeStdio) line(t *testing.T) []byte {
	t.Helper()
	got := make(chan []byte, 1)
	go func() {
		l, _ := p.out.ReadBytes('\n')
		got <- l
	}()
	return waitFor(t, got, "a stdout line")
}

func TestServeStdioFraming(t *testing.T) {
	s, _ := newServer(t, &Options{Limits: Limits{MaxBodyBytes: 512}})
	addText(t, s, "t", "ok")
	p := startPipeStdio(t, s, context.Background())
	write := func(b string) {
		if _, err := io.WriteString(p.in, b); err != nil {
			t.Fatal(err)
		}
	}
	write("\n\r\n") // blank lines are ignored
	write(`{"jsonrpc":"2.0","id":"big","method":"tools/call","params":{"pad":"` + strings.Repeat("x", 2000) + `"}}` + "\n")
	if got := string(p.line(t)); got != `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Message exceeds the size limit"}}`+"\n" {
		t.Errorf("over-long line: %q", got)
	}
	write(string(body(t, 1, "tools/call", toolCall(nil, "t", nil))) + "\r\n")
	if got := p.line(t); !bytes.HasPrefix(got, []byte(`{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete"`)) || bytes.Count(got, []byte("\n")) != 1 {
		t.Errorf("CRLF line: %q", got)
	}
	// A final line without a newline is served before EOF ends the loop.
	write(string(body(t, 2, "tools/call", toolCall(nil, "t", nil))))
	p.in.Close()
	if got := p.line(t); !bytes.HasPrefix(got, []byte(`{"jsonrpc":"2.0","id":2,`)) {
		t.Errorf("last line: %q", got)
	}
	if err := waitFor(t, p.done, "ServeStdio returning at EOF"); err != nil {
		t.Errorf("ServeStdio at EOF: %v", err)
	}
}

func TestServeStdioContextCancel(t *testing.T) {
	s, _ := newServer(t, nil)
	started := make(chan struct{})
	stopped := make(chan error, 1)
	must(t, s.AddTool(Tool{Name: "block", Description: "Blocks."}, func(ctx context.Context, req *Request) (*CallToolResult, error) {
		close(started)
		<-ctx.Done()
		stopped <- ctx.Err()
		return nil, ctx.Err()
	}))
	ctx, cancel := context.WithCancel(context.Background())
	p := startPipeStdio(t, s, ctx)
	if _, err := p.in.Write(append(body(t, 1, "tools/call", toolCall(nil, "block", nil)), '\n')); err != nil {
		t.Fatal(err)
	}
	waitFor(t, started, "the handler starting")
	cancel()
	if err := waitFor(t, p.done, "ServeStdio returning"); !errors.Is(err, context.Canceled) {
		t.Errorf("ServeStdio = %v, want context.Canceled", err)
	}
	if err := waitFor(t, stopped, "the handler stopping"); !errors.Is(err, context.Canceled) {
		t.Errorf("handler ctx: %v", err)
	}
	if rest, _ := io.ReadAll(p.out); len(rest) != 0 {
		t.Errorf("a cancelled request answered: %q", rest)
	}
}

// TestServeStdioEOFEndsListen: a client that closes its side of the
// connection can no longer cancel its subscriptions/listen stream, so EOF
// ends the stream with its result (as shutdown does) and ServeStdio
// returns, after answering a call still running.
func TestServeStdioEOFEndsListen(t *testing.T) {
	s := listenServer(t, nil)
	release := make(chan struct{})
	must(t, s.AddTool(Tool{Name: "slow", Description: "Finishes when released."}, func(ctx context.Context, req *Request) (*CallToolResult, error) {
		<-release
		return textResult("done"), nil
	}))
	p := startPipeStdio(t, s, t.Context())
	send := func(b []byte) {
		if _, err := p.in.Write(append(b, '\n')); err != nil {
			t.Fatal(err)
		}
	}
	send(body(t, "listen", "subscriptions/listen", params(M{"notifications": M{"toolsListChanged": true}})))
	if got := p.line(t); !bytes.Contains(got, []byte("notifications/subscriptions/acknowledged")) {
		t.Fatalf("first line %q, want the acknowledgement", got)
	}
	send(body(t, "slow", "tools/call", toolCall(nil, "slow", nil)))
	p.in.Close()
	got := p.line(t)
	if !bytes.HasPrefix(got, []byte(`{"jsonrpc":"2.0","id":"listen","result":`)) {
		t.Fatalf("after EOF %q, want the listen stream's result", got)
	}
	close(release)
	if got := p.line(t); !bytes.HasPrefix(got, []byte(`{"jsonrpc":"2.0","id":"slow","result":`)) {
		t.Fatalf("%q, want the running call's result", got)
	}
	if err := waitFor(t, p.done, "ServeStdio returning at EOF"); err != nil {
		t.Fatalf("ServeStdio: %v", err)
	}
}
