package weft

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/weftmcp/weft/exactjson"
)

// ServeStdio serves MCP over a byte stream with stdio framing: one JSON-RPC
// message per line in r, responses and notifications one per line on w.
// Requests run concurrently; notifications/cancelled cancels the named
// request (which then sends nothing more). It returns nil at EOF on r, after
// in-flight requests finish (subscriptions/listen streams, which only the
// client could end, end at EOF with their result), or ctx's error when ctx
// ends first. Nothing but protocol messages is written to w, each one whole
// on its line: logs go to Options.Logger.
//
// A 2025-era client's initialize opens a session for the connection, which
// then hears about changes between its requests, as the GET stream of an
// HTTP session does: list changes of tools, prompts and resources, and
// resources/updated for the URIs it subscribed to. The session ends with the
// connection.
func (s *Server) ServeStdio(ctx context.Context, r io.Reader, w io.Writer) error {
	ctx, cancelAll := context.WithCancel(ctx)
	defer cancelAll()
	out := &stdioConn{w: bufio.NewWriter(w), hangup: make(chan struct{})}
	// The session's events run until the requests are done: at EOF they
	// finish first, so a change they announce still reaches the client.
	evCtx, stopEvents := context.WithCancel(ctx)
	var events sync.WaitGroup
	defer func() {
		stopEvents()
		events.Wait()
		for _, a := range s.adapters {
			a.endStdio(out)
		}
	}()
	var (
		mu       sync.Mutex
		inflight = map[string]context.CancelFunc{}
		wg       sync.WaitGroup
	)
	br := bufio.NewReaderSize(r, 64<<10)
	readErr := make(chan error, 1)
	lines := make(chan []byte)
	go func() {
		for {
			line, err := readLine(br, s.limits.MaxBodyBytes)
			if len(line) > 0 || errors.Is(err, errLineTooLong) {
				select {
				case lines <- line:
				case <-ctx.Done():
					readErr <- ctx.Err()
					return
				}
			}
			if err != nil && !errors.Is(err, errLineTooLong) {
				readErr <- err
				return
			}
		}
	}()
	var result error
loop:
	for {
		select {
		case <-ctx.Done():
			result = ctx.Err()
			break loop
		case err := <-readErr:
			// Nothing more can arrive: the streams that only the client
			// could end (subscriptions/listen) end now, and the requests
			// that finish on their own are answered first.
			close(out.hangup)
			if !errors.Is(err, io.EOF) {
				result = fmt.Errorf("weft: stdio read: %w", err)
			}
			break loop
		case line := <-lines:
			if line == nil {
				out.write(appendErrorResponse(nil, ID{}, protocolError(CodeParseError, "Message exceeds the size limit", exactjson.Value{})))
				continue
			}
			if cancelled, ok := cancelTarget(line); ok {
				mu.Lock()
				if c := inflight[cancelled]; c != nil {
					c()
				}
				mu.Unlock()
				continue
			}
			key := requestKey(line)
			rctx, cancel := context.WithCancel(ctx)
			if key != "" {
				mu.Lock()
				if _, dup := inflight[key]; !dup {
					inflight[key] = cancel
				}
				mu.Unlock()
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer cancel()
				rn := &stdioNotifier{out: out, ctx: rctx}
				var once sync.Once
				send := func(rep reply) {
					once.Do(func() {
						if rep.err != nil {
							_ = out.write(appendErrorResponse(nil, rep.id, rep.err))
						} else {
							_ = out.write(responseBytes(rep))
						}
					})
				}
				early := replyFunc(func(rep reply) {
					if rctx.Err() == nil {
						send(rep)
					}
				})
				rep := s.serve(rctx, &inbound{body: line, endpoint: "stdio", transport: "stdio", out: rn, conn: out, early: early})
				if key != "" {
					mu.Lock()
					delete(inflight, key)
					mu.Unlock()
				}
				if !rep.none && rctx.Err() == nil { // a notification, or cancelled: nothing more
					send(rep)
				}
				if len(s.adapters) > 0 && out.startEvents() {
					// The initialize response is out: the session's events
					// follow it.
					for _, a := range s.adapters {
						events.Add(1)
						go func() {
							defer events.Done()
							a.stdioEvents(evCtx, out)
						}()
					}
				}
			}()
		}
	}
	if result != nil {
		cancelAll()
	}
	wg.Wait()
	return result
}

var errLineTooLong = errors.New("line too long")

// readLine reads one newline-terminated line, at most max bytes; an
// over-long line is discarded and reported as (nil, errLineTooLong).
func readLine(br *bufio.Reader, max int) ([]byte, error) {
	var buf []byte
	tooLong := false
	for {
		frag, err := br.ReadSlice('\n')
		if !tooLong {
			if len(buf)+len(frag) > max+1 {
				tooLong, buf = true, nil
			} else {
				buf = append(buf, frag...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if tooLong {
			if err != nil {
				return nil, err
			}
			return nil, errLineTooLong
		}
		return bytes.TrimRight(buf, "\r\n"), err
	}
}

// cancelTarget recognizes notifications/cancelled and returns the key of the
// request it cancels.
func cancelTarget(line []byte) (string, bool) {
	if !bytes.Contains(line, []byte("notifications/cancelled")) {
		return "", false
	}
	v, err := exactjson.Parse(line, exactjson.Limits{})
	if err != nil {
		return "", false
	}
	if m, _ := v.Get("method"); !isString(m, "notifications/cancelled") || v.Has("id") {
		return "", false
	}
	p, _ := v.Get("params")
	rid, ok := p.Get("requestId")
	if !ok {
		return "", true // invalid cancellations are ignored
	}
	return ID{rid}.key(), true
}

func requestKey(line []byte) string {
	v, err := exactjson.Parse(line, exactjson.Limits{})
	if err != nil {
		return ""
	}
	id, ok := v.Get("id")
	if !ok {
		return ""
	}
	return ID{id}.key()
}

// stdioConn is one stdio connection: its writer, which puts each message
// whole on its line, and the 2025-era session its initialize opened.
type stdioConn struct {
	mu sync.Mutex // held while a message is written
	w  *bufio.Writer
	// hangup is closed when the client's side of the connection ends (EOF
	// or a read error).
	hangup chan struct{}

	smu sync.Mutex
	sid string
	// sub is the session's bus subscription, from its initialize until the
	// connection ends; pumping reports that its event pump was started.
	sub     *subscriber
	pumping bool
}

// bind records the session the connection's initialize opened and its bus
// subscription; false when the connection has one already.
func (o *stdioConn) bind(sid string, sub *subscriber) bool {
	o.smu.Lock()
	defer o.smu.Unlock()
	if o.sid != "" {
		return false
	}
	o.sid, o.sub = sid, sub
	return true
}

// session returns the connection's session and its bus subscription.
func (o *stdioConn) session() (string, *subscriber) {
	o.smu.Lock()
	defer o.smu.Unlock()
	return o.sid, o.sub
}

// startEvents reports, once, that the connection has a session whose event
// pump should start.
func (o *stdioConn) startEvents() bool {
	o.smu.Lock()
	defer o.smu.Unlock()
	if o.sub == nil || o.pumping {
		return false
	}
	o.pumping = true
	return true
}

func (o *stdioConn) write(msg []byte) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, err := o.w.Write(msg); err != nil {
		return err
	}
	if err := o.w.WriteByte('\n'); err != nil {
		return err
	}
	return o.w.Flush()
}

type stdioNotifier struct {
	out *stdioConn
	ctx context.Context
}

func (n *stdioNotifier) canStream() bool { return true }

// hangup is closed when the client's side of the connection has ended.
func (n *stdioNotifier) hangup() <-chan struct{} { return n.out.hangup }

func (n *stdioNotifier) send(f frame) error {
	if n.ctx.Err() != nil {
		return n.ctx.Err()
	}
	b, err := appendFrame(make([]byte, 0, 128), f)
	if err != nil {
		return err
	}
	return n.out.write(b)
}
