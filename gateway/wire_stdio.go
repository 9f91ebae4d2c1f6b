package gateway

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weftmcp/weft/exactjson"
	"github.com/weftmcp/weft/internal/jsonrpc"
	"github.com/weftmcp/weft/internal/stdiocmd"
)

// stdioWire speaks the stdio transport with a command it started: one
// JSON-RPC message per line on the command's stdin and stdout.
type stdioWire struct {
	name     string
	proc     *stdiocmd.Command
	stderr   *tailBuffer
	shutdown time.Duration

	wmu    sync.Mutex
	nextID atomic.Int64

	mu        sync.Mutex
	calls     jsonrpc.Calls[*stdioCall]
	inbound   map[string]context.CancelFunc // server requests being answered
	closed    bool
	cause     error
	doneCh    chan struct{}
	closeOnce sync.Once
	unrouted  func(method string, params exactjson.Value)
}

type stdioCall struct {
	resp chan msg
	sink *sink
}

// maxLine bounds one message line of an upstream.
const maxLine = exactjson.MaxInputBytesCeiling

// startStdio starts the command and its reader.
func startStdio(name string, cmd *exec.Cmd, shutdown time.Duration, unrouted func(string, exactjson.Value)) (*stdioWire, error) {
	tail := &tailBuffer{max: 4096}
	cmd.Stderr = tail
	// A process group of its own: signals reach the command's children too.
	proc, err := stdiocmd.Start(cmd, true)
	if err != nil {
		return nil, fmt.Errorf("gateway: upstream %q: cannot start %s: %w", name, cmd.Path, err)
	}
	w := &stdioWire{name: name, proc: proc, stderr: tail, shutdown: shutdown,
		inbound: map[string]context.CancelFunc{}, doneCh: make(chan struct{}), unrouted: unrouted}
	go w.readLoop(proc.Stdout)
	return w, nil
}

func (w *stdioWire) done() <-chan struct{} { return w.doneCh }

func (w *stdioWire) err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.cause
}

func (w *stdioWire) setSession(string, string) {}

// fail marks the wire broken and wakes every call.
func (w *stdioWire) fail(err error) {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return
	}
	w.closed, w.cause = true, err
	inbound := w.inbound
	w.calls, w.inbound = jsonrpc.Calls[*stdioCall]{}, map[string]context.CancelFunc{}
	w.mu.Unlock()
	for _, cancel := range inbound {
		cancel()
	}
	close(w.doneCh)
}

// exitError describes the command's end for an error message.
func (w *stdioWire) exitError(what string) error {
	select {
	case <-w.proc.Exited():
	case <-time.After(200 * time.Millisecond):
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s", what)
	select {
	case <-w.proc.Exited():
		if err := w.proc.WaitErr(); err != nil {
			fmt.Fprintf(&b, " (%v)", err)
		} else {
			b.WriteString(" (exit status 0)")
		}
	default:
	}
	if t := strings.TrimSpace(w.stderr.String()); t != "" {
		fmt.Fprintf(&b, "; stderr: %s", t)
	}
	return fmt.Errorf("%w: upstream %q: %s", errUpstreamClosed, w.name, b.String())
}

func (w *stdioWire) readLoop(r io.Reader) {
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := jsonrpc.ReadLine(br, maxLine)
		if len(bytes.TrimSpace(line)) > 0 {
			if perr := w.handle(line); perr != nil {
				// A server must write nothing but MCP messages on stdout:
				// what follows garbage cannot be trusted.
				snippet := string(line)
				if len(snippet) > 120 {
					snippet = snippet[:120] + "..."
				}
				w.fail(fmt.Errorf("%w: upstream %q wrote a line that is not a JSON-RPC message (%v): %q", errUpstreamClosed, w.name, perr, snippet))
				go w.close()
				return
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				w.fail(w.exitError("the server closed its output"))
			} else {
				w.fail(w.exitError(fmt.Sprintf("reading its output: %v", err)))
			}
			return
		}
	}
}

func (w *stdioWire) handle(line []byte) error {
	m, err := parseMsg(line)
	if err != nil {
		return err
	}
	switch {
	case m.method == "": // a response
		w.mu.Lock()
		c, ok := w.calls.Take(jsonrpc.IDKey(m.id))
		w.mu.Unlock()
		if ok {
			c.resp <- m
		}
	case m.hasID: // a server-to-client request
		c := w.route(m.method, m.params)
		ctx, cancel := context.WithCancel(context.Background())
		key := jsonrpc.IDKey(m.id)
		w.mu.Lock()
		if w.closed {
			w.mu.Unlock()
			cancel()
			return nil
		}
		w.inbound[key] = cancel
		w.mu.Unlock()
		var s *sink
		if c != nil {
			s = c.sink
		}
		go func() {
			defer cancel()
			out := answerServerRequest(ctx, m, s)
			w.mu.Lock()
			delete(w.inbound, key)
			w.mu.Unlock()
			_ = w.write(out)
		}()
	default: // a notification
		if m.method == "notifications/cancelled" {
			rid, _ := m.params.Get("requestId")
			w.mu.Lock()
			cancel := w.inbound[jsonrpc.IDKey(rid)]
			w.mu.Unlock()
			if cancel != nil {
				cancel()
			}
			return nil
		}
		c := w.route(m.method, m.params)
		if c != nil && c.sink != nil && c.sink.notify != nil {
			c.sink.notify(m.method, m.params)
		} else if c == nil && w.unrouted != nil {
			w.unrouted(m.method, m.params)
		}
	}
	return nil
}

// route finds the call a message of the upstream belongs to: by progress
// token, else the only call in flight. List changes belong to no call.
func (w *stdioWire) route(method string, params exactjson.Value) *stdioCall {
	if strings.HasSuffix(method, "/list_changed") || method == "notifications/resources/updated" {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if method == "notifications/progress" {
		if tok, ok := params.Get("progressToken"); ok {
			c, _ := w.calls.ByToken(jsonrpc.IDKey(tok))
			return c
		}
	}
	if meta, ok := params.Get("_meta"); ok {
		if tok, ok := meta.Get("progressToken"); ok {
			if c, ok := w.calls.ByToken(jsonrpc.IDKey(tok)); ok {
				return c
			}
		}
	}
	var only *stdioCall
	for c := range w.calls.All() {
		if c.sink == nil {
			continue
		}
		if only != nil {
			return nil // ambiguous
		}
		only = c
	}
	return only
}

func (w *stdioWire) write(b []byte) error {
	w.wmu.Lock()
	defer w.wmu.Unlock()
	_, err := w.proc.Stdin.Write(append(b, '\n'))
	return err
}

func (w *stdioWire) notify(_ context.Context, method string, params exactjson.Value) error {
	b, err := jsonrpc.EncodeNotification(method, params)
	if err != nil {
		return err
	}
	return w.write(b)
}

func (w *stdioWire) call(ctx context.Context, method string, params exactjson.Value, s *sink) (exactjson.Value, error) {
	id := w.nextID.Add(1)
	b, err := encodeCall(id, method, params, s)
	if err != nil {
		return exactjson.Value{}, err
	}
	key, token := jsonrpc.IDKey(exactjson.Int(id)), ""
	if s != nil {
		token = key
	}
	c := &stdioCall{resp: make(chan msg, 1), sink: s}
	w.mu.Lock()
	if w.closed {
		err := w.cause
		w.mu.Unlock()
		return exactjson.Value{}, err
	}
	w.calls.Add(key, token, c)
	w.mu.Unlock()
	unregister := func() {
		w.mu.Lock()
		w.calls.Remove(key, token, c)
		w.mu.Unlock()
	}
	written := make(chan error, 1)
	go func() { written <- w.write(b) }()
	cancelled := func() {
		unregister()
		n, _ := jsonrpc.Cancelled(id, context.Cause(ctx).Error())
		go func() {
			if <-written == nil {
				_ = w.write(n)
			}
		}()
	}
	select {
	case err := <-written:
		written <- err // for cancelled
		if err != nil {
			unregister()
			return exactjson.Value{}, w.exitError(fmt.Sprintf("cannot write %s: %v", method, err))
		}
	case <-ctx.Done():
		cancelled()
		return exactjson.Value{}, ctx.Err()
	case <-w.doneCh:
		return exactjson.Value{}, w.err()
	}
	select {
	case m := <-c.resp:
		if m.isError {
			return exactjson.Value{}, rpcError(m.errorObj)
		}
		if m.result.Kind() != exactjson.KindObject {
			return exactjson.Value{}, fmt.Errorf("gateway: upstream %q: the result of %s is not an object", w.name, method)
		}
		return m.result, nil
	case <-w.doneCh:
		return exactjson.Value{}, w.err()
	case <-ctx.Done():
		cancelled()
		return exactjson.Value{}, ctx.Err()
	}
}

// close shuts the command down as the spec asks: close its stdin, wait,
// SIGTERM (its process group), wait, SIGKILL.
func (w *stdioWire) close() error {
	w.closeOnce.Do(func() {
		w.fail(fmt.Errorf("%w: upstream %q", errUpstreamClosed, w.name))
		w.proc.Shutdown(w.shutdown)
	})
	return nil
}

// tailBuffer keeps the last max bytes written to it (a command's stderr,
// quoted in errors).
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = append([]byte(nil), t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}

// commandFor builds the exec.Cmd of a stdio upstream: the gateway's
// environment plus Env, or Env alone with CleanEnv.
func commandFor(u *UpstreamConfig) *exec.Cmd {
	cmd := exec.Command(u.Command, u.Args...)
	cmd.Dir = u.Dir
	env := []string{}
	if !u.CleanEnv {
		env = os.Environ()
	}
	for _, k := range sortedKeys(u.Env) {
		env = append(env, k+"="+expand(u.Env[k]))
	}
	cmd.Env = env
	return cmd
}
