package gateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

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
	noise    *stdoutNoise // nil: strict framing (stdoutNoise "fail")
	shutdown time.Duration
	t        *client.StdioTransport
	nextID   atomic.Int64

	closeOnce sync.Once
	causeMu   sync.Mutex
	cause     error // why the wire ended, once it has
}

// startStdio starts the command and its transport. A transport that
// breaks (the command closed its output, wrote garbage) shuts the command
// down. With noiseLog, the lines of the command's stdout that are no MCP
// messages are logged there and skipped (stdoutNoise "log").
func startStdio(name string, cmd *exec.Cmd, shutdown time.Duration, unrouted func(string, exactjson.Value), noiseLog *slog.Logger) (*stdioWire, error) {
	tail := &tailBuffer{max: 4096}
	cmd.Stderr = tail
	// A process group of its own: signals reach the command's children too.
	proc, err := stdiocmd.Start(cmd, true)
	if err != nil {
		return nil, fmt.Errorf("gateway: upstream %q: cannot start %s: %w", name, cmd.Path, err)
	}
	var (
		noise *stdoutNoise
		opts  client.StdioOptions
	)
	if noiseLog != nil {
		noise = &stdoutNoise{name: name, pid: cmd.Process.Pid, log: noiseLog}
		opts.Noise = noise.add
	}
	// The transport does not own the pipes (they are no io.Closers to it):
	// close shuts the command down the way the spec asks.
	t := client.NewStdioTransport(struct{ io.Reader }{proc.Stdout}, struct{ io.Writer }{proc.Stdin}, &opts)
	if unrouted != nil {
		t.SetUnroutedHandler(func(n client.Notification) { unrouted(n.Method, n.Params) })
	}
	w := &stdioWire{name: name, proc: proc, stderr: tail, noise: noise, shutdown: shutdown, t: t}
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

// stdoutNoise returns the noise report of a stdio upstream's process (nil:
// not a stdio upstream, or strict framing).
func (c *conn) stdoutNoise() *stdoutNoise {
	if w, ok := c.w.(*stdioWire); ok {
		return w.noise
	}
	return nil
}

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
	if n, last := w.noise.since(0); n > 0 {
		fmt.Fprintf(&b, "; %s", describeNoise(n, last))
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
	if s != nil {
		req.Attending = s.attending
	}
	before := w.noise.count()
	resp, err := w.t.Do(ctx, req, notify)
	switch {
	case err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()):
		return exactjson.Value{}, w.noise.explain(err, before)
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
		w.noise.summary()
	})
	return nil
}

// Bounds of the report of a stdio upstream's stdout noise.
const (
	noiseLogged  = 10  // lines of a process logged one by one
	noiseKept    = 5   // last lines kept for errors
	noiseLineMax = 200 // bytes of a line logged or kept
)

// stdoutNoise reports the lines a stdio upstream's process writes on its
// stdout that are no MCP messages (stdoutNoise "log"), bounded so that a
// chatty server cannot flood the log: the first noiseLogged are logged at
// Warn one by one, then one summary each time the count doubles, and one
// when the process ends; the last noiseKept are kept for the errors about
// the upstream. Its methods accept a nil receiver (strict framing: no
// noise).
type stdoutNoise struct {
	name string
	pid  int
	log  *slog.Logger

	mu   sync.Mutex
	n    int      // lines so far
	last []string // the last noiseKept lines, truncated
}

// add records one line (the transport's noise handler: it runs on the
// reader goroutine, and logs at most a few lines per doubling).
func (s *stdoutNoise) add(line []byte) {
	l := truncateLine(line)
	s.mu.Lock()
	s.n++
	n := s.n
	s.last = append(s.last, l)
	if len(s.last) > noiseKept {
		s.last = slices.Delete(s.last, 0, len(s.last)-noiseKept)
	}
	s.mu.Unlock()
	switch {
	case n <= noiseLogged:
		s.log.Warn("gateway: upstream wrote a line that is no MCP message on stdout; skipped",
			"upstream", s.name, "pid", s.pid, "line", l, "count", n)
		if n == noiseLogged {
			s.log.Warn("gateway: upstream writes much on stdout; logging only a count from now on",
				"upstream", s.name, "pid", s.pid, "count", n)
		}
	case n&(n-1) == 0 && n > noiseLogged: // a power of two
		s.log.Warn("gateway: upstream keeps writing lines that are no MCP messages on stdout; skipped",
			"upstream", s.name, "pid", s.pid, "count", n, "last", l)
	}
}

// since returns how many lines were written after the first n, and the
// last of them that are kept.
func (s *stdoutNoise) since(n int) (int, []string) {
	if s == nil {
		return 0, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.n - n
	return d, slices.Clone(s.last[len(s.last)-min(d, len(s.last)):])
}

// count returns how many lines were written so far.
func (s *stdoutNoise) count() int {
	if s == nil {
		return 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

// explain adds to err (a call that did not end in time, say) the lines
// written after the first n, if any: a server that printed something
// else than its answer.
func (s *stdoutNoise) explain(err error, n int) error {
	if d, last := s.since(n); d > 0 {
		return fmt.Errorf("%w (meanwhile upstream %q wrote %s)", err, s.name, describeNoise(d, last))
	}
	return err
}

// summary logs the count of a process that wrote more than was logged.
func (s *stdoutNoise) summary() {
	if n := s.count(); n > noiseLogged {
		s.log.Warn("gateway: upstream process ended; it wrote lines that are no MCP messages on stdout",
			"upstream", s.name, "pid", s.pid, "count", n)
	}
}

// describeNoise says that n lines of noise were written, quoting the last.
func describeNoise(n int, last []string) string {
	q := make([]string, len(last))
	for i, l := range last {
		q[i] = strconv.Quote(l)
	}
	what := fmt.Sprintf("%d lines that are no MCP messages on stdout", n)
	if n == 1 {
		what = "a line that is no MCP message on stdout"
	}
	if len(last) < n {
		return fmt.Sprintf("%s, the last %d: %s", what, len(last), strings.Join(q, ", "))
	}
	return fmt.Sprintf("%s: %s", what, strings.Join(q, ", "))
}

// truncateLine bounds a line for the log and errors, as valid UTF-8.
func truncateLine(line []byte) string {
	cut := ""
	if len(line) > noiseLineMax {
		i := noiseLineMax
		for i > 0 && !utf8.RuneStart(line[i]) {
			i--
		}
		line, cut = line[:i], "..."
	}
	return strings.ToValidUTF8(string(line), "\uFFFD") + cut
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
