package client

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/weftmcp/weft/exactjson"
	"github.com/weftmcp/weft/internal/jsonrpc"
	"github.com/weftmcp/weft/internal/stdiocmd"
)

// StdioTransport speaks MCP's stdio framing (one JSON-RPC message per line)
// over a byte stream pair. Concurrent requests are multiplexed by id; a
// request whose context ends is cancelled with notifications/cancelled.
//
// The server must write nothing but MCP messages on its stdout, so the
// framing is strict by default: a line that is not a JSON-RPC message
// (blank lines aside) breaks the transport, failing every request in flight
// with an error wrapping [ErrClosed] and [ErrProtocol] that quotes the
// line. What follows such a line cannot be trusted, and a response lost in
// it would otherwise leave its request waiting until its deadline.
//
// Many servers in the field print a banner, a warning or a log line on
// stdout all the same. [StdioOptions.Noise] accepts them: a line that is no
// attempt at a JSON-RPC message goes to the handler and is skipped. What
// counts as noise is narrow (see [StdioOptions.Noise]); a server that speaks
// JSON-RPC wrongly still breaks the transport.
//
// A notification goes to the request it belongs to, else to the unrouted
// handler ([StdioTransport.SetUnroutedHandler]):
//   - notifications/progress: the request of its progressToken;
//   - one carrying _meta subscriptionId: the subscriptions/listen request
//     of that id;
//   - list changes and notifications/resources/updated without one: no
//     request;
//   - one whose _meta echoes a request's progressToken: that request;
//   - any other: the only request in flight that receives notifications
//     (a non-nil notify in Do) and attends ([Request.Attending]), if there
//     is exactly one.
//
// notifications/cancelled cancels the server request it names. A server
// request (2025-era servers ask for input that way) goes to the request
// whose progressToken its _meta echoes, else to the only request in flight
// with [Request.OnServerRequest] that attends, which runs once the
// notifications the server sent the request before it are delivered. ping
// is answered at once, and a request no OnServerRequest claims by the
// handler of [StdioTransport.SetServerRequestHandler], else with an error.
// When a
// request's context ends, notifications/cancelled is written before any
// answer to its server requests, whose hooks see their contexts end too.
type StdioTransport struct {
	w      io.Writer
	closer func() error

	wmu sync.Mutex // serializes writes

	mu       sync.Mutex
	calls    jsonrpc.Calls[*stdioCall]
	inbound  map[string]*serverRequest // server requests being answered, by id key
	unrouted func(Notification)
	// unclaimed answers the server requests no request in flight claims
	// (nil: an error answers them).
	unclaimed func(ctx context.Context, method string, params exactjson.Value) (exactjson.Value, error)
	noise     func(line []byte) // set at construction only: read without mu
	trace     WireTrace         // set at construction only
	// unanswered counts the server requests whose answer is not written
	// yet (at most MaxServerRequests).
	unanswered int
	// cancelling counts the cancellations being written (Do's sendCancel);
	// cancelsSent is closed when it drops to 0 (nil while it is 0).
	cancelling  int
	cancelsSent chan struct{}
	closed      bool
	err         error // why the transport is closed
	done        chan struct{}
	closeMu     sync.Once
	maxLine     int
	closeErr    error
}

type stdioCall struct {
	listens bool // the caller receives its notifications
	// attending is the request's Attending (nil: always).
	attending func() bool
	// answer is the request's OnServerRequest, run with ctx (which ends
	// when the request does).
	answer func(ctx context.Context, method string, params exactjson.Value) (exactjson.Value, error)
	ctx    context.Context

	// settled is closed once the server has been told the request's fate:
	// when Do returns, or, when the request is cancelled, once
	// notifications/cancelled is written. Answers to the request's server
	// requests that end with its cancellation wait for it, so the server
	// learns of the cancellation before it can finish the request on an
	// error answer.
	settled chan struct{}

	mu       sync.Mutex
	items    []callItem // what the server sent for the call, in order
	resp     *Response
	finished bool // Do returned: server requests are answered at once
	wake     chan struct{}
}

// callItem is a notification of a call, or a server request (req != nil)
// to answer once the notifications before it are delivered.
type callItem struct {
	n   Notification
	req *serverRequest
}

// serverRequest is a server request being answered.
type serverRequest struct {
	id     exactjson.Value
	key    string
	method string
	params exactjson.Value
	ctx    context.Context
	cancel context.CancelFunc // nil: answered without a hook
	call   *stdioCall         // the request it belongs to (nil: none)
}

func (c *stdioCall) signal() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// StdioOptions configure a [StdioTransport] at construction, before it
// reads its first line. The zero value (or nil) is usable.
type StdioOptions struct {
	// Noise, when set, makes the transport tolerate a server that writes lines
	// other than MCP messages on its stdout (the spec forbids it; many servers
	// print a banner or a log line there all the same): such a line is
	// handed to Noise, without its line terminator, and skipped, instead of
	// breaking the transport. Noise runs on the transport's reader
	// goroutine, one line at a time and in the order the server wrote them;
	// it must not block, since every message after the line waits for it.
	// line is a copy that it may keep. Nil leaves the framing strict.
	//
	// A line is noise when it is no attempt at a JSON-RPC message:
	//   - it is not JSON and does not contain "jsonrpc" in quotes (a message
	//     cut short or holding invalid UTF-8 does);
	//   - it is a JSON object without a "jsonrpc" member (a structured log
	//     line; a server that leaves jsonrpc out of its messages loses them
	//     to the handler too);
	//   - it is a JSON array none of whose elements has a "jsonrpc" member (a
	//     batch is not noise), a string, a number, true, false or null.
	//
	// Everything else stays strict: a JSON-RPC message that is malformed (a
	// jsonrpc other than "2.0", a response without id, ...) is the server
	// speaking the protocol wrongly, and a line longer than the transport's
	// bound, or JSON too deep, too large or with too long a string to parse,
	// may be an answer the transport cannot take; skipping either would leave
	// a request waiting until its deadline, so both still break the transport.
	//
	// It is an option rather than a setter so that it is in force before
	// the transport reads the first line: a server often prints its banner
	// the moment it starts.
	Noise func(line []byte)
	// WireTrace, when set, receives every line the transport writes and
	// every line it reads (see [WireTrace]).
	WireTrace WireTrace

	maxLine int // tests: the bound of a line, below the default
}

// NewStdioTransport runs the stdio framing over r (server to client) and w
// (client to server). Close closes w and r when they are io.Closers.
func NewStdioTransport(r io.Reader, w io.Writer, opts *StdioOptions) *StdioTransport {
	t := newStdio(r, w, opts)
	t.closer = func() error {
		var errs []error
		if c, ok := w.(io.Closer); ok {
			errs = append(errs, c.Close())
		}
		if c, ok := r.(io.Closer); ok {
			errs = append(errs, c.Close())
		}
		return errors.Join(errs...)
	}
	return t
}

func newStdio(r io.Reader, w io.Writer, opts *StdioOptions) *StdioTransport {
	t := &StdioTransport{
		w:       w,
		inbound: map[string]*serverRequest{},
		done:    make(chan struct{}),
		maxLine: exactjson.MaxInputBytesCeiling,
	}
	if opts != nil {
		t.noise, t.trace = opts.Noise, opts.WireTrace
		if opts.maxLine > 0 {
			t.maxLine = opts.maxLine
		}
	}
	go t.readLoop(r)
	return t
}

// CommandShutdownTimeout is how long Close waits for a command started by
// [CommandTransport] to exit after its stdin is closed, and again after
// SIGTERM, before killing it.
const CommandShutdownTimeout = 5 * time.Second

// CommandTransport starts cmd as an MCP server speaking stdio and returns
// its transport. cmd's Stdin and Stdout must be unset; Stderr is left as
// configured (nil discards it). Close shuts the server down the way the
// spec asks: close its stdin, wait, then SIGTERM, then SIGKILL.
func CommandTransport(cmd *exec.Cmd, opts *StdioOptions) (*StdioTransport, error) {
	if cmd.Stdin != nil || cmd.Stdout != nil {
		return nil, errors.New("client: CommandTransport needs a command without Stdin and Stdout")
	}
	proc, err := stdiocmd.Start(cmd, false)
	if err != nil {
		return nil, fmt.Errorf("client: starting %s: %w", cmd.Path, err)
	}
	t := newStdio(proc.Stdout, proc.Stdin, opts)
	t.closer = func() error {
		proc.Shutdown(CommandShutdownTimeout)
		var ee *exec.ExitError
		if err := proc.WaitErr(); err != nil && !errors.As(err, &ee) {
			return err
		}
		return nil // the server's exit status is not the client's error
	}
	return t, nil
}

// SetUnroutedHandler sets the handler for notifications no in-flight
// request claims. It runs on the reader goroutine and must not block.
func (t *StdioTransport) SetUnroutedHandler(f func(Notification)) {
	t.mu.Lock()
	t.unrouted = f
	t.mu.Unlock()
}

// SetServerRequestHandler sets the handler of the server requests no
// in-flight request claims (a 2025-era server asking roots/list right after
// initialize, say); without one they are answered with an error. It runs
// on a goroutine of its own per request; ctx ends when the server cancels
// the request. A returned *RPCError is sent as it is.
func (t *StdioTransport) SetServerRequestHandler(f func(ctx context.Context, method string, params exactjson.Value) (exactjson.Value, error)) {
	t.mu.Lock()
	t.unclaimed = f
	t.mu.Unlock()
}

// closeFlush bounds how long Close waits for the cancellations being
// written (a server that stopped reading its input holds them).
const closeFlush = time.Second

// Close closes the transport (for a command: shuts the server down) and
// fails requests in flight with ErrClosed. The notifications/cancelled of
// requests whose context ended are written first (for at most a second),
// so that the server learns of them before its input ends.
func (t *StdioTransport) Close() error {
	t.closeMu.Do(func() {
		t.mu.Lock()
		sent := t.cancelsSent
		t.mu.Unlock()
		if sent != nil {
			timer := time.NewTimer(closeFlush)
			select {
			case <-sent:
			case <-timer.C:
			}
			timer.Stop()
		}
		t.fail(ErrClosed)
		if t.closer != nil {
			t.closeErr = t.closer()
		}
	})
	return t.closeErr
}

// Done is closed when the transport has closed or broken; Err says why.
func (t *StdioTransport) Done() <-chan struct{} { return t.done }

// Err reports why the transport ended: nil while it runs, ErrClosed after
// Close, otherwise an error wrapping ErrClosed that says what broke it (the
// server closed its output, a read or write failed, or the server broke
// the framing: then it wraps ErrProtocol too).
func (t *StdioTransport) Err() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.err
}

// fail marks the transport closed, wakes every pending call and cancels
// the server requests being answered.
func (t *StdioTransport) fail(err error) {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return
	}
	t.closed, t.err = true, err
	calls, inbound := t.calls, t.inbound
	t.calls, t.inbound = jsonrpc.Calls[*stdioCall]{}, map[string]*serverRequest{}
	t.mu.Unlock()
	close(t.done)
	for c := range calls.All() {
		c.signal()
	}
	for _, r := range inbound {
		r.cancel()
	}
}

func (t *StdioTransport) write(line []byte) error {
	t.wmu.Lock()
	defer t.wmu.Unlock()
	if t.trace != nil {
		t.trace(true, line)
	}
	line = append(line, '\n')
	_, err := t.w.Write(line)
	return err
}

// Notify sends a notification to the server (a 2025-era session's
// notifications/initialized, say); params that are not an object are left
// out. It returns when the line is written or ctx ends.
func (t *StdioTransport) Notify(ctx context.Context, method string, params exactjson.Value) error {
	line, err := jsonrpc.EncodeNotification(method, params)
	if err != nil {
		return fmt.Errorf("client: encoding %s: %w", method, err)
	}
	t.mu.Lock()
	closed, cause := t.closed, t.err
	t.mu.Unlock()
	if closed {
		return cause
	}
	_, err = t.writeWithin(ctx, line)
	return err
}

// writeWithin writes line without letting a stalled server hold the
// caller past ctx: when ctx ends first it returns ctx's error and the
// channel the write's outcome will arrive on. A failed write breaks the
// transport.
func (t *StdioTransport) writeWithin(ctx context.Context, line []byte) (pending <-chan error, err error) {
	written := make(chan error, 1)
	go func() { written <- t.write(line) }()
	select {
	case err := <-written:
		if err != nil {
			err = fmt.Errorf("%w: write: %w", ErrClosed, err)
			t.fail(err)
		}
		return nil, err
	case <-ctx.Done():
		return written, ctx.Err()
	}
}

// Do sends req and waits for its response, delivering routed notifications
// on the calling goroutine.
func (t *StdioTransport) Do(ctx context.Context, req *Request, notify func(Notification)) (*Response, error) {
	line, err := encodeRequest(req)
	if err != nil {
		return nil, fmt.Errorf("client: encoding %s: %w", req.Method, err)
	}
	key := jsonrpc.IDKey(exactjson.Int(req.ID))
	cancelling := false // the cancellation's write settles the call
	call := &stdioCall{wake: make(chan struct{}, 1), listens: notify != nil, settled: make(chan struct{}), attending: req.Attending}
	settle := sync.OnceFunc(func() { close(call.settled) })
	defer func() {
		if !cancelling {
			settle()
		}
	}()
	if req.OnServerRequest != nil {
		actx, cancel := context.WithCancel(ctx)
		defer cancel() // ends the server requests still being answered
		call.ctx, call.answer = actx, req.OnServerRequest
	}
	var tokenKey string
	if tok, ok := metaOf(req.Params).Get("progressToken"); ok {
		tokenKey = jsonrpc.IDKey(tok)
	}
	t.mu.Lock()
	if t.closed {
		err := t.err
		t.mu.Unlock()
		return nil, err
	}
	if !t.calls.Add(key, tokenKey, call) {
		t.mu.Unlock()
		return nil, fmt.Errorf("client: request id %d is already in flight", req.ID)
	}
	t.mu.Unlock()
	defer t.finish(call)
	unregister := func() {
		t.mu.Lock()
		t.calls.Remove(key, tokenKey, call)
		t.mu.Unlock()
	}
	// sendCancel tells the server the request is cancelled once the request
	// itself is written (written, when still pending), without waiting;
	// the answers its server requests end with wait for it (settle).
	sendCancel := func(written <-chan error) {
		msg, _ := jsonrpc.Cancelled(req.ID, context.Cause(ctx).Error())
		cancelling = true
		t.mu.Lock()
		if t.cancelling++; t.cancelling == 1 {
			t.cancelsSent = make(chan struct{})
		}
		t.mu.Unlock()
		go func() {
			if (written == nil || <-written == nil) && msg != nil {
				_ = t.write(msg)
			}
			settle()
			t.mu.Lock()
			if t.cancelling--; t.cancelling == 0 {
				close(t.cancelsSent)
				t.cancelsSent = nil
			}
			t.mu.Unlock()
		}()
	}
	if written, err := t.writeWithin(ctx, line); err != nil {
		unregister()
		if written != nil { // ctx ended first
			sendCancel(written)
		}
		return nil, err
	}
	// drain delivers queued notifications, starts answering the server
	// requests queued after them, and reports the response if it has
	// arrived (after everything that preceded it).
	drain := func() *Response {
		for {
			call.mu.Lock()
			items, resp := call.items, call.resp
			call.items = nil
			call.mu.Unlock()
			for _, it := range items {
				switch {
				case it.req != nil:
					go t.answer(call.answer, it.req)
				case notify != nil:
					notify(it.n)
				}
			}
			if len(items) == 0 {
				return resp
			}
		}
	}
	for {
		select {
		case <-call.wake:
			if resp := drain(); resp != nil {
				return resp, nil
			}
		case <-t.done:
			if resp := drain(); resp != nil {
				return resp, nil
			}
			t.mu.Lock()
			err := t.err
			t.mu.Unlock()
			return nil, err
		case <-ctx.Done():
			unregister()
			if resp := drain(); resp != nil {
				return resp, nil
			}
			sendCancel(nil)
			return nil, ctx.Err()
		}
	}
}

func (t *StdioTransport) readLoop(r io.Reader) {
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := readLine(br, t.maxLine)
		if len(bytes.TrimSpace(line)) > 0 {
			if t.trace != nil {
				t.trace(false, line)
			}
			if perr := t.handleLine(line); perr != nil && t.noise != nil && isNoise(line) {
				t.noise(bytes.Clone(line))
			} else if perr != nil {
				snippet := string(line)
				if len(snippet) > 120 {
					snippet = snippet[:120] + "..."
				}
				t.fail(fmt.Errorf("%w: the server wrote a line that is not a JSON-RPC message (%w): %q", ErrClosed, perr, snippet))
				return
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				t.fail(fmt.Errorf("%w: the server closed its output", ErrClosed))
			} else {
				t.fail(fmt.Errorf("%w: read: %w", ErrClosed, err))
			}
			return
		}
	}
}

// handleLine dispatches one message; it returns the error of a line that
// is not a JSON-RPC message.
func (t *StdioTransport) handleLine(line []byte) error {
	m, err := parseMessage(line)
	if err != nil {
		return err
	}
	switch m.kind {
	case msgResponse:
		t.mu.Lock()
		call, ok := t.calls.Take(jsonrpc.IDKey(m.id))
		t.mu.Unlock()
		if ok {
			call.mu.Lock()
			call.resp = m.resp
			call.mu.Unlock()
			call.signal()
		}
	case msgRequest:
		t.serve(m)
	case msgNotification:
		n := Notification{Method: m.method, Params: m.params}
		if n.Method == "notifications/cancelled" {
			rid, _ := n.Params.Get("requestId")
			t.mu.Lock()
			r := t.inbound[jsonrpc.IDKey(rid)]
			t.mu.Unlock()
			if r != nil {
				r.cancel()
			}
			return nil
		}
		call, unrouted := t.route(n)
		if call != nil {
			call.mu.Lock()
			call.items = append(call.items, callItem{n: n})
			call.mu.Unlock()
			call.signal()
		} else if unrouted != nil {
			unrouted(n)
		}
	}
	return nil
}

// route finds the call a notification belongs to (nil: none) and returns
// the unrouted handler.
func (t *StdioTransport) route(n Notification) (*stdioCall, func(Notification)) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if tok, ok := n.Params.Get("progressToken"); ok && n.Method == "notifications/progress" {
		c, _ := t.calls.ByToken(jsonrpc.IDKey(tok))
		return c, t.unrouted
	}
	meta := metaOf(n.Params)
	if sid, ok := meta.Get(metaSubscriptionID); ok {
		c, _ := t.calls.ByID(jsonrpc.IDKey(sid))
		return c, t.unrouted
	}
	if strings.HasSuffix(n.Method, "/list_changed") || n.Method == "notifications/resources/updated" {
		return nil, t.unrouted
	}
	return t.claimLocked(meta, func(c *stdioCall) bool { return c.listens }), t.unrouted
}

// claimLocked returns the call whose progress token meta echoes, else the
// only call in flight that wants the message, else nil.
func (t *StdioTransport) claimLocked(meta exactjson.Value, wants func(*stdioCall) bool) *stdioCall {
	if tok, ok := meta.Get("progressToken"); ok {
		if c, ok := t.calls.ByToken(jsonrpc.IDKey(tok)); ok {
			return c
		}
	}
	var only *stdioCall
	for c := range t.calls.All() {
		if !wants(c) || c.attending != nil && !c.attending() {
			continue
		}
		if only != nil {
			return nil // ambiguous
		}
		only = c
	}
	return only
}

// serve queues a server-to-client request to the call it belongs to (its
// hook runs once the call's earlier notifications are delivered), or
// answers it at once: ping, and a request no hook claims.
func (t *StdioTransport) serve(m message) {
	r := &serverRequest{id: m.id, key: jsonrpc.IDKey(m.id), method: m.method, params: m.params}
	if r.params.Kind() != exactjson.KindObject {
		r.params = exactjson.Object()
	}
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return
	}
	if t.unanswered >= MaxServerRequests {
		t.mu.Unlock()
		t.fail(fmt.Errorf("%w: %w: the server sent more than %d requests of its own without waiting for their answers",
			ErrClosed, ErrProtocol, MaxServerRequests))
		return
	}
	t.unanswered++
	if m.method == "ping" {
		t.mu.Unlock()
		go t.reply(r, exactjson.Object(), nil)
		return
	}
	call := t.claimLocked(metaOf(r.params), func(c *stdioCall) bool { return c.answer != nil })
	if call == nil || call.answer == nil {
		h := t.unclaimed
		if h == nil {
			t.mu.Unlock()
			go t.reply(r, exactjson.Value{}, &RPCError{Code: CodeInternalError, Message: "client: no single request in flight answers " + m.method})
			return
		}
		r.ctx, r.cancel = context.WithCancel(context.Background())
		t.inbound[r.key] = r
		t.mu.Unlock()
		go t.answer(h, r)
		return
	}
	r.ctx, r.cancel = context.WithCancel(call.ctx)
	r.call = call
	t.inbound[r.key] = r
	t.mu.Unlock()
	call.mu.Lock()
	if call.finished {
		call.mu.Unlock()
		go t.reply(r, exactjson.Value{}, context.Canceled)
		return
	}
	call.items = append(call.items, callItem{req: r})
	call.mu.Unlock()
	call.signal()
}

// finish ends a call's Do: server requests still queued for it are
// answered with an error, as are those that arrive later.
func (t *StdioTransport) finish(call *stdioCall) {
	call.mu.Lock()
	call.finished = true
	items := call.items
	call.items = nil
	call.mu.Unlock()
	for _, it := range items {
		if it.req != nil {
			go t.reply(it.req, exactjson.Value{}, context.Canceled)
		}
	}
}

// answer runs hook for server request r and sends its answer.
func (t *StdioTransport) answer(hook func(context.Context, string, exactjson.Value) (exactjson.Value, error), r *serverRequest) {
	res, err := hook(r.ctx, r.method, r.params)
	t.reply(r, res, err)
}

// reply sends the answer to server request r. An answer to a request of a
// cancelled call waits until the server is told of the cancellation.
func (t *StdioTransport) reply(r *serverRequest, res exactjson.Value, err error) {
	if r.call != nil && r.call.ctx.Err() != nil {
		select {
		case <-r.call.settled:
		case <-t.done:
		}
	}
	if r.cancel != nil {
		r.cancel()
		t.mu.Lock()
		if t.inbound[r.key] == r {
			delete(t.inbound, r.key)
		}
		t.mu.Unlock()
	}
	_ = t.write(encodeAnswer(r.id, res, err))
	t.mu.Lock()
	t.unanswered--
	t.mu.Unlock()
}

// encodeAnswer encodes the response to a server request.
func encodeAnswer(id, res exactjson.Value, err error) []byte {
	var (
		b    []byte
		eerr error
	)
	var re *RPCError
	switch {
	case err == nil:
		b, eerr = jsonrpc.EncodeResult(id, res)
	case errors.As(err, &re):
		b, eerr = jsonrpc.EncodeError(id, re.Code, re.Message, re.Data)
	default:
		b, eerr = jsonrpc.EncodeError(id, CodeInternalError, err.Error(), exactjson.Value{})
	}
	if eerr != nil {
		b, _ = jsonrpc.EncodeError(id, CodeInternalError, "client: cannot encode the answer: "+eerr.Error(), exactjson.Value{})
	}
	return b
}

// readLine is [jsonrpc.ReadLine] with an over-long line reported as a
// protocol error.
func readLine(br *bufio.Reader, max int) ([]byte, error) {
	line, err := jsonrpc.ReadLine(br, max)
	if errors.Is(err, jsonrpc.ErrLineTooLong) {
		return nil, protocolErrorf("line exceeds %d bytes", max)
	}
	return line, err
}
