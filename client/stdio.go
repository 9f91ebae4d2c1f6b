package client

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"sync"
	"time"

	"github.com/weftmcp/weft/exactjson"
	"github.com/weftmcp/weft/internal/jsonrpc"
	"github.com/weftmcp/weft/internal/stdiocmd"
)

// StdioTransport speaks MCP's stdio framing (one JSON-RPC message per line)
// over a byte stream pair. Concurrent requests are multiplexed by id;
// progress notifications are routed to their request by progressToken,
// subscription notifications by their subscriptionId, and a notification
// no request claims goes to the request if only one is in flight, otherwise
// to the unrouted handler. A request whose context ends is cancelled with
// notifications/cancelled.
type StdioTransport struct {
	w      io.Writer
	closer func() error

	wmu sync.Mutex // serializes writes

	mu       sync.Mutex
	calls    jsonrpc.Calls[*stdioCall]
	unrouted func(Notification)
	closed   bool
	err      error // why the transport is closed
	done     chan struct{}
	closeMu  sync.Once
	maxLine  int
	closeErr error
}

type stdioCall struct {
	mu    sync.Mutex
	notes []Notification
	resp  *Response
	wake  chan struct{}
}

func (c *stdioCall) signal() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// NewStdioTransport runs the stdio framing over r (server to client) and w
// (client to server). Close closes w and r when they are io.Closers.
func NewStdioTransport(r io.Reader, w io.Writer) *StdioTransport {
	t := newStdio(r, w)
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

func newStdio(r io.Reader, w io.Writer) *StdioTransport {
	t := &StdioTransport{
		w:       w,
		done:    make(chan struct{}),
		maxLine: exactjson.MaxInputBytesCeiling,
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
func CommandTransport(cmd *exec.Cmd) (*StdioTransport, error) {
	if cmd.Stdin != nil || cmd.Stdout != nil {
		return nil, errors.New("client: CommandTransport needs a command without Stdin and Stdout")
	}
	proc, err := stdiocmd.Start(cmd, false)
	if err != nil {
		return nil, fmt.Errorf("client: starting %s: %w", cmd.Path, err)
	}
	t := newStdio(proc.Stdout, proc.Stdin)
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

// Close closes the transport (for a command: shuts the server down) and
// fails requests in flight with ErrClosed.
func (t *StdioTransport) Close() error {
	t.closeMu.Do(func() {
		t.fail(ErrClosed)
		if t.closer != nil {
			t.closeErr = t.closer()
		}
	})
	return t.closeErr
}

// fail marks the transport closed and wakes every pending call.
func (t *StdioTransport) fail(err error) {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return
	}
	t.closed, t.err = true, err
	calls := t.calls
	t.calls = jsonrpc.Calls[*stdioCall]{}
	t.mu.Unlock()
	close(t.done)
	for c := range calls.All() {
		c.signal()
	}
}

func (t *StdioTransport) write(line []byte) error {
	t.wmu.Lock()
	defer t.wmu.Unlock()
	line = append(line, '\n')
	_, err := t.w.Write(line)
	return err
}

// Do sends req and waits for its response, delivering routed notifications
// on the calling goroutine.
func (t *StdioTransport) Do(ctx context.Context, req *Request, notify func(Notification)) (*Response, error) {
	line, err := encodeRequest(req)
	if err != nil {
		return nil, fmt.Errorf("client: encoding %s: %w", req.Method, err)
	}
	key := jsonrpc.IDKey(exactjson.Int(req.ID))
	call := &stdioCall{wake: make(chan struct{}, 1)}
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
	unregister := func() {
		t.mu.Lock()
		t.calls.Remove(key, tokenKey, call)
		t.mu.Unlock()
	}
	cancelMsg := func() []byte {
		b, _ := jsonrpc.Cancelled(req.ID, context.Cause(ctx).Error())
		return b
	}
	// Write without letting a stalled peer hold the caller past ctx.
	written := make(chan error, 1)
	go func() { written <- t.write(line) }()
	select {
	case err := <-written:
		if err != nil {
			unregister()
			err = fmt.Errorf("%w: write: %v", ErrClosed, err)
			t.fail(err)
			return nil, err
		}
	case <-ctx.Done():
		unregister()
		msg := cancelMsg()
		go func() {
			if <-written == nil && msg != nil {
				_ = t.write(msg)
			}
		}()
		return nil, ctx.Err()
	}
	// drain delivers queued notifications and reports the response if it
	// has arrived (after every notification that preceded it).
	drain := func() *Response {
		for {
			call.mu.Lock()
			notes, resp := call.notes, call.resp
			call.notes = nil
			call.mu.Unlock()
			for _, n := range notes {
				if notify != nil {
					notify(n)
				}
			}
			if len(notes) == 0 {
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
			// Tell the server; do not wait for the write.
			if msg := cancelMsg(); msg != nil {
				go func() { _ = t.write(msg) }()
			}
			return nil, ctx.Err()
		}
	}
}

func (t *StdioTransport) readLoop(r io.Reader) {
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := readLine(br, t.maxLine)
		if len(line) > 0 {
			t.handleLine(line)
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				t.fail(fmt.Errorf("%w: the server closed its output", ErrClosed))
			} else {
				t.fail(fmt.Errorf("%w: read: %v", ErrClosed, err))
			}
			return
		}
	}
}

func (t *StdioTransport) handleLine(line []byte) {
	m, err := parseMessage(line)
	if err != nil {
		return // not a protocol message: ignore it
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
	case msgNotification:
		n := Notification{Method: m.method, Params: m.params}
		call, unrouted := t.route(n)
		if call != nil {
			call.mu.Lock()
			call.notes = append(call.notes, n)
			call.mu.Unlock()
			call.signal()
		} else if unrouted != nil {
			unrouted(n)
		}
	}
}

// route finds the call a notification belongs to.
func (t *StdioTransport) route(n Notification) (*stdioCall, func(Notification)) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if tok, ok := n.Params.Get("progressToken"); ok && n.Method == "notifications/progress" {
		c, _ := t.calls.ByToken(jsonrpc.IDKey(tok))
		return c, t.unrouted
	}
	if sid, ok := metaOf(n.Params).Get(metaSubscriptionID); ok {
		c, _ := t.calls.ByID(jsonrpc.IDKey(sid))
		return c, t.unrouted
	}
	if t.calls.Len() == 1 {
		for c := range t.calls.All() {
			return c, nil
		}
	}
	return nil, t.unrouted
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
