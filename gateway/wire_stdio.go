package gateway

import (
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

	"github.com/weftmcp/weft/client"
	"github.com/weftmcp/weft/exactjson"
	"github.com/weftmcp/weft/internal/stdiocmd"
)

// stdioWire is a stdio upstream: a command the gateway started in a process
// group of its own, spoken to through a [client.StdioTransport] (framing,
// calls in flight, routing of notifications and server requests,
// cancellation). The wire adds what is the gateway's: the process, its
// stderr quoted in errors, its shutdown, and sinks as per-call hooks.
type stdioWire struct {
	name     string
	proc     *stdiocmd.Command
	stderr   *tailBuffer
	shutdown time.Duration
	t        *client.StdioTransport
	nextID   atomic.Int64

	closeOnce sync.Once
	causeMu   sync.Mutex
	cause     error // why the wire ended, once it has
}

// startStdio starts the command and its transport. A transport that
// breaks (the command closed its output, wrote garbage) shuts the command
// down.
func startStdio(name string, cmd *exec.Cmd, shutdown time.Duration, unrouted func(string, exactjson.Value)) (*stdioWire, error) {
	tail := &tailBuffer{max: 4096}
	cmd.Stderr = tail
	// A process group of its own: signals reach the command's children too.
	proc, err := stdiocmd.Start(cmd, true)
	if err != nil {
		return nil, fmt.Errorf("gateway: upstream %q: cannot start %s: %w", name, cmd.Path, err)
	}
	// The transport does not own the pipes (they are no io.Closers to it):
	// close shuts the command down the way the spec asks.
	t := client.NewStdioTransport(struct{ io.Reader }{proc.Stdout}, struct{ io.Writer }{proc.Stdin})
	if unrouted != nil {
		t.SetUnroutedHandler(func(n client.Notification) { unrouted(n.Method, n.Params) })
	}
	w := &stdioWire{name: name, proc: proc, stderr: tail, shutdown: shutdown, t: t}
	go func() {
		<-t.Done()
		_ = w.close()
	}()
	return w, nil
}

func (w *stdioWire) done() <-chan struct{} { return w.t.Done() }

// err says why the wire ended (nil while it runs): closed by the gateway,
// or what broke it, with the command's exit status and stderr.
func (w *stdioWire) err() error {
	terr := w.t.Err()
	if terr == nil {
		return nil
	}
	w.causeMu.Lock()
	defer w.causeMu.Unlock()
	if w.cause == nil {
		if terr == client.ErrClosed { // Close's own error, not one wrapping it
			w.cause = fmt.Errorf("%w: upstream %q", errUpstreamClosed, w.name)
		} else {
			w.cause = w.exitError(terr)
		}
	}
	return w.cause
}

func (w *stdioWire) setSession(string, string) {}

// exitError describes a broken transport with the command's end.
func (w *stdioWire) exitError(cause error) error {
	select {
	case <-w.proc.Exited():
	case <-time.After(200 * time.Millisecond):
	}
	var b strings.Builder
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
	return fmt.Errorf("%w: upstream %q: %w%s", errUpstreamClosed, w.name, cause, b.String())
}

func (w *stdioWire) notify(ctx context.Context, method string, params exactjson.Value) error {
	if err := w.t.Notify(ctx, method, params); err != nil {
		return w.failure(err)
	}
	return nil
}

// failure maps an error of the transport: a broken transport is the
// wire's err.
func (w *stdioWire) failure(err error) error {
	if errors.Is(err, client.ErrClosed) {
		if werr := w.err(); werr != nil {
			return werr
		}
	}
	return err
}

func (w *stdioWire) call(ctx context.Context, method string, params exactjson.Value, s *sink) (exactjson.Value, error) {
	id := w.nextID.Add(1)
	req := &client.Request{ID: id, Method: method, Params: withProgressToken(params, id, s)}
	var notify func(client.Notification)
	if s != nil && s.notify != nil {
		notify = func(n client.Notification) { s.notify(n.Method, n.Params) }
	}
	if s != nil && s.request != nil {
		req.OnServerRequest = s.answer
	}
	resp, err := w.t.Do(ctx, req, notify)
	switch {
	case err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()):
		return exactjson.Value{}, err
	case err != nil:
		return exactjson.Value{}, w.failure(err)
	case resp.Error != nil:
		if resp.Error.Code == 0 {
			resp.Error.Code = client.CodeInternalError
		}
		if resp.Error.Message == "" {
			resp.Error.Message = "error without a message"
		}
		return exactjson.Value{}, resp.Error
	case resp.Result.Kind() != exactjson.KindObject:
		return exactjson.Value{}, fmt.Errorf("gateway: upstream %q: the result of %s is not an object", w.name, method)
	}
	return resp.Result, nil
}

// close shuts the command down as the spec asks: close its stdin, wait,
// SIGTERM (its process group), wait, SIGKILL.
func (w *stdioWire) close() error {
	w.closeOnce.Do(func() {
		_ = w.t.Close() // fails the calls in flight; the pipes stay open
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
