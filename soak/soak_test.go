package soak

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/weftmcp/weft/client"
	"github.com/weftmcp/weft/exactjson"
	"github.com/weftmcp/weft/internal/testpg"
)

// Configuration (environment):
//
//	WEFT_SOAK=1                 run the soak (skipped otherwise)
//	WEFT_SOAK_DURATION=120s     how long the clients run
//	WEFT_SOAK_CLIENTS=200       concurrent clients
//	WEFT_SOAK_PG_RESTART=off    skip the PostgreSQL restart
//	WEFT_SOAK_REPORT=path       where the report goes (default: a new
//	                            weft-soak-*.md in the OS temp directory)
//	WEFT_SOAK_LOGS=dir          where the instances' logs go (default: the
//	                            test's temp directory)
//	WEFT_PG_BIN, WEFT_PG_USER   the PostgreSQL binaries and OS user of the
//	                            soak's own cluster (see internal/testpg)
//
// The soak never uses the machine's PostgreSQL: it starts a throwaway
// cluster of its own (testpg.StartCluster) and restarts that one.

// Bounds of the run: every wait below is bounded by one of these.
const (
	opTimeout        = 20 * time.Second // one client operation (a whole MRTR flow)
	taskPhaseTimeout = 45 * time.Second // one task from creation to its end, while the load runs
	drainTimeout     = 90 * time.Second // every task to a terminal state after the load
	drainShutdown    = 30 * time.Second // a SIGTERMed instance to exit
	readyTimeout     = 30 * time.Second // an instance to answer after a start
	taskLease        = 2 * time.Second
	rssCeiling       = 512 << 20 // VmHWM of each server process
	goroutineSlack   = 3
)

type config struct {
	duration  time.Duration
	clients   int
	pgRestart bool
	report    string
}

func loadConfig(t *testing.T) config {
	c := config{duration: 120 * time.Second, clients: 200, pgRestart: true, report: os.Getenv("WEFT_SOAK_REPORT")}
	if v := os.Getenv("WEFT_SOAK_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 20*time.Second || d > 10*time.Minute {
			t.Fatalf("WEFT_SOAK_DURATION=%q: want 20s..10m", v)
		}
		c.duration = d
	}
	if v := os.Getenv("WEFT_SOAK_CLIENTS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 4 || n > 2000 {
			t.Fatalf("WEFT_SOAK_CLIENTS=%q: want 4..2000", v)
		}
		c.clients = n
	}
	switch v := os.Getenv("WEFT_SOAK_PG_RESTART"); v {
	case "", "on":
	case "off":
		c.pgRestart = false
	default:
		t.Fatalf("WEFT_SOAK_PG_RESTART=%q: want on or off (the soak restarts only its own cluster)", v)
	}
	return c
}

// ---------------------------------------------------------------------------
// Server processes

// incarnation is one run of a server process.
type incarnation struct {
	pid      int
	started  time.Time
	ended    time.Time
	how      string // "running", "SIGTERM", "SIGKILL", "stopped"
	exitCode int
	drain    time.Duration // SIGTERM to exit
	hwm      atomic.Int64  // VmHWM in bytes
	done     chan struct{}
}

type instance struct {
	name, addr, bin, logPath string
	args                     []string

	mu    sync.Mutex
	cmd   *exec.Cmd
	runs  []*incarnation
	logf  *os.File
	ready func(ctx context.Context, addr string) error
}

func (in *instance) current() *incarnation {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.runs[len(in.runs)-1]
}

func (in *instance) start(t *testing.T) {
	t.Helper()
	in.mu.Lock()
	if in.logf == nil {
		f, err := os.OpenFile(in.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			in.mu.Unlock()
			t.Fatal(err)
		}
		in.logf = f
	}
	fmt.Fprintf(in.logf, "=== soak: starting %s at %s\n", in.name, time.Now().Format(time.RFC3339Nano))
	cmd := exec.Command(in.bin, append([]string{"serve", "--addr", in.addr}, in.args...)...)
	cmd.Stdout, cmd.Stderr = in.logf, in.logf
	if err := cmd.Start(); err != nil {
		in.mu.Unlock()
		t.Fatalf("start %s: %v", in.name, err)
	}
	inc := &incarnation{pid: cmd.Process.Pid, started: time.Now(), how: "running", done: make(chan struct{})}
	in.cmd = cmd
	in.runs = append(in.runs, inc)
	in.mu.Unlock()
	go func() {
		_ = cmd.Wait() // the exit code says how it ended
		inc.ended = time.Now()
		inc.exitCode = cmd.ProcessState.ExitCode()
		close(inc.done)
	}()
	go sampleHWM(inc)
	ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
	defer cancel()
	for {
		if err := in.ready(ctx, in.addr); err == nil {
			return
		}
		select {
		case <-inc.done:
			t.Fatalf("%s exited during start (code %d); see %s", in.name, inc.exitCode, in.logPath)
		case <-ctx.Done():
			t.Fatalf("%s did not become ready within %s; see %s", in.name, readyTimeout, in.logPath)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// sampleHWM follows VmHWM of a process until it exits.
func sampleHWM(inc *incarnation) {
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		if v := readHWM(inc.pid); v > inc.hwm.Load() {
			inc.hwm.Store(v)
		}
		select {
		case <-inc.done:
			return
		case <-tick.C:
		}
	}
}

func readHWM(pid int) int64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// signal sends sig and waits (bounded) for the process to exit.
func (in *instance) signal(t *testing.T, sig syscall.Signal, how string, within time.Duration) *incarnation {
	t.Helper()
	inc := in.current()
	if v := readHWM(inc.pid); v > inc.hwm.Load() {
		inc.hwm.Store(v)
	}
	inc.how = how
	sent := time.Now()
	in.mu.Lock()
	err := in.cmd.Process.Signal(sig)
	in.mu.Unlock()
	if err != nil {
		t.Errorf("%s %s: %v", how, in.name, err)
	}
	select {
	case <-inc.done:
		inc.drain = time.Since(sent)
	case <-time.After(within):
		t.Errorf("%s did not exit within %s of %s; killing it", in.name, within, how)
		in.mu.Lock()
		_ = in.cmd.Process.Kill()
		in.mu.Unlock()
		<-inc.done
		inc.drain = time.Since(sent)
	}
	return inc
}

func (in *instance) stop(t *testing.T) {
	inc := in.current()
	select {
	case <-inc.done:
		return
	default:
	}
	in.signal(t, syscall.SIGTERM, "stopped", drainShutdown)
}

func (in *instance) maxHWM() int64 {
	in.mu.Lock()
	defer in.mu.Unlock()
	var m int64
	for _, r := range in.runs {
		m = max(m, r.hwm.Load())
	}
	return m
}

// ---------------------------------------------------------------------------
// Faults

type fault struct {
	name       string
	start, end time.Time // the window in which errors are attributed to it
	detail     string
}

type faults struct {
	mu   sync.Mutex
	list []*fault
}

func (f *faults) add(x *fault) {
	f.mu.Lock()
	f.list = append(f.list, x)
	f.mu.Unlock()
}

// window names the fault whose window holds t ("steady" when none).
func (f *faults) window(t time.Time) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, x := range f.list {
		if !t.Before(x.start) && !t.After(x.end) {
			return x.name
		}
	}
	return "steady"
}

// ---------------------------------------------------------------------------
// Tasks

type taskRec struct {
	id, topic string
	action    string // "", "charts", "no-charts", "cancel"
	orphan    bool   // found in the database, its creation response lost
	terminal  string // first terminal status seen
	result    string // its result text
	updatedAt string // its lastUpdatedAt
	creations int
}

func (r *taskRec) want() (status, text string) {
	switch r.action {
	case "cancel":
		return "cancelled", ""
	case "no-charts":
		return "completed", "Report on " + r.topic + " without charts."
	}
	return "completed", "Report on " + r.topic + " with charts."
}

type registry struct {
	mu    sync.Mutex
	tasks map[string]*taskRec
	dups  int
}

func (g *registry) add(id, topic string) *taskRec {
	g.mu.Lock()
	defer g.mu.Unlock()
	if r, ok := g.tasks[id]; ok {
		r.creations++
		g.dups++
		return r
	}
	r := &taskRec{id: id, topic: topic, creations: 1}
	g.tasks[id] = r
	return r
}

func (g *registry) all() []*taskRec {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([]*taskRec, 0, len(g.tasks))
	for _, r := range g.tasks {
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b *taskRec) int { return strings.Compare(a.id, b.id) })
	return out
}

// snapshot is what tasks/get says about a task.
type snapshot struct{ status, result, updatedAt, message string }

func snap(t *client.Task) snapshot {
	s := snapshot{status: t.Status, updatedAt: t.LastUpdatedAt, message: t.StatusMessage}
	if t.Result.Kind() == exactjson.KindObject {
		c, _ := t.Result.Get("content")
		tx, _ := c.Index(0).Get("text")
		s.result, _ = tx.AsString()
	}
	return s
}

func terminal(status string) bool {
	return status == client.TaskCompleted || status == client.TaskFailed || status == client.TaskCancelled
}

// observe records the first terminal snapshot and reports whether a later
// one differs (a second completion).
func (g *registry) observe(r *taskRec, s snapshot) (changed bool) {
	if !terminal(s.status) {
		return false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if r.terminal == "" {
		r.terminal, r.result, r.updatedAt = s.status, s.result, s.updatedAt
		return false
	}
	return r.terminal != s.status || r.result != s.result || r.updatedAt != s.updatedAt
}

// ---------------------------------------------------------------------------
// Flows

type flows struct {
	mu     sync.Mutex
	counts map[[2]string]int64
}

func (f *flows) add(kind, outcome string) {
	f.mu.Lock()
	f.counts[[2]string{kind, outcome}]++
	f.mu.Unlock()
}

func flowErr(err error) string {
	var rpc *client.RPCError
	var he *client.HTTPError
	switch {
	case errors.As(err, &rpc):
		return fmt.Sprintf("error %d HTTP %d %s", rpc.Code, rpc.HTTPStatus, rpc.Message)
	case errors.As(err, &he):
		return "HTTP " + strconv.Itoa(he.StatusCode)
	case errors.Is(err, context.DeadlineExceeded):
		return "timed out"
	case errors.Is(err, context.Canceled):
		return "cancelled"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	}
	s := err.Error()
	if i := strings.LastIndex(s, ": "); i >= 0 {
		s = s[i+2:]
	}
	return s
}

// soak is one run.
type soak struct {
	t       *testing.T
	cfg     config
	stats   *Stats
	lb      *Balancer
	faults  faults
	tasks   registry
	flows   flows
	start   time.Time
	loadEnd time.Time
	inst    []*instance
	pg      *testpg.Cluster
	db      *sql.DB
	schema  string

	listenSem chan struct{}
	recentMu  sync.Mutex
	recent    []string
	topicSeq  atomic.Int64
	changed   atomic.Int64 // terminal snapshots that changed later

	leasedAtKill []string // tasks with a running step when B was killed
}

var tasksCaps = exactjson.Object(
	exactjson.Field("elicitation", exactjson.Object(exactjson.Field("form", exactjson.Object()))),
	exactjson.Field("extensions", exactjson.Object(exactjson.Field(client.TasksExtension, exactjson.Object()))))

// elicit answers the demo's forms: approve the catalog, confirm the cart,
// ship express.
func elicit(ctx context.Context, params exactjson.Value) (exactjson.Value, error) {
	schema, _ := params.Get("requestedSchema")
	props, _ := schema.Get("properties")
	content := []exactjson.Member{}
	if props.Has("confirm") {
		content = append(content, exactjson.Field("confirm", exactjson.Bool(true)))
	}
	if props.Has("speed") {
		content = append(content, exactjson.Field("speed", exactjson.String("express")))
	}
	return exactjson.Object(exactjson.Field("action", exactjson.String("accept")),
		exactjson.Field("content", exactjson.Object(content...))), nil
}

// worker is one client: its own connection pool, a plain client (forms,
// progress) and a tasks client, both behind the checking balancer.
type worker struct {
	s     *soak
	rng   *rand.Rand
	plain *client.Client
	tasks *client.Client
	tr    *http.Transport
}

func (s *soak) newWorker(seed uint64) *worker {
	tr := &http.Transport{MaxIdleConnsPerHost: 4, IdleConnTimeout: 30 * time.Second}
	hc := &http.Client{Transport: &Checker{Base: tr, Stats: s.stats, LB: s.lb}}
	url := "http://balanced/mcp"
	w := &worker{s: s, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), tr: tr}
	w.plain = client.New(client.NewHTTPTransport(url, &client.HTTPOptions{Client: hc}), &client.Options{
		Handlers:   client.Handlers{Elicit: elicit},
		OnProgress: func(p, total float64, msg string) {},
	})

	w.tasks = client.New(client.NewHTTPTransport(url, &client.HTTPOptions{Client: hc}), &client.Options{Capabilities: tasksCaps, Handlers: client.Handlers{Elicit: elicit}})
	return w
}

func (w *worker) close() {
	_ = w.plain.Close()
	_ = w.tasks.Close()
	w.tr.CloseIdleConnections()
}

func (w *worker) run(ctx context.Context) {
	for ctx.Err() == nil {
		w.one(ctx)
		select {
		case <-ctx.Done():
		case <-time.After(time.Duration(100+w.rng.IntN(400)) * time.Millisecond):
		}
	}
}

func (w *worker) one(loadCtx context.Context) {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	switch p := w.rng.IntN(100); {
	case p < 15:
		w.refundFirstRound(ctx)
	case p < 35:
		w.catalogFlow(ctx)
	case p < 50:
		w.cartFlow(ctx)
	case p < 61:
		w.taskFlow(loadCtx)
	case p < 72:
		w.listenFlow(ctx)
	case p < 85:
		w.cancelledCall(ctx)
	default:
		w.discover(ctx)
	}
}

func (w *worker) refundFirstRound(ctx context.Context) {
	res, err := w.plain.Call(ctx, "tools/call", exactjson.Object(
		exactjson.Field("name", exactjson.String("refund.request")),
		exactjson.Field("arguments", exactjson.Object(exactjson.Field("orderId", exactjson.String("A-"+strconv.Itoa(w.rng.IntN(1000))))))))
	switch {
	case err != nil:
		w.s.flows.add("refund.request (first round)", "failed: "+flowErr(err))
	case str(res, "resultType") != "input_required" || str(res, "requestState") == "":
		w.s.flows.add("refund.request (first round)", "wrong result")
	default:
		w.s.flows.add("refund.request (first round)", "ok")
	}
}

func (w *worker) catalogFlow(ctx context.Context) {
	res, err := w.plain.CallTool(ctx, "catalog.continue", exactjson.Object())
	switch {
	case err != nil:
		w.s.flows.add("catalog.continue (form + framework state)", "failed: "+flowErr(err))
	case res.Text() != "Catalog access approved; continuing.":
		w.s.flows.add("catalog.continue (form + framework state)", "wrong result: "+res.Text())
	default:
		w.s.flows.add("catalog.continue (form + framework state)", "ok")
	}
}

func (w *worker) cartFlow(ctx context.Context) {
	items := []string{"pen-" + strconv.Itoa(w.rng.IntN(100)), "ink"}
	res, err := w.plain.CallTool(ctx, "cart.checkout", exactjson.Object(exactjson.Field("items",
		exactjson.Array(exactjson.String(items[0]), exactjson.String(items[1])))))
	want := "Ordered " + items[0] + ", ink with express shipping."
	switch {
	case err != nil:
		w.s.flows.add("cart.checkout (two rounds, handles)", "failed: "+flowErr(err))
	case res.Text() != want:
		w.s.flows.add("cart.checkout (two rounds, handles)", "wrong result: "+res.Text())
	default:
		w.s.flows.add("cart.checkout (two rounds, handles)", "ok")
	}
}

func (w *worker) discover(ctx context.Context) {
	if _, err := w.plain.Discover(ctx); err != nil {
		w.s.flows.add("server/discover", "failed: "+flowErr(err))
		return
	}
	w.s.flows.add("server/discover", "ok")
}

// cancelledCall starts report.generate synchronously (no tasks extension:
// about a second with progress over SSE) and cancels it mid-flight.
func (w *worker) cancelledCall(ctx context.Context) {
	after := time.Duration(100+w.rng.IntN(800)) * time.Millisecond
	cctx, cancel := context.WithTimeout(ctx, after)
	defer cancel()
	_, err := w.plain.Call(cctx, "tools/call", exactjson.Object(
		exactjson.Field("name", exactjson.String("report.generate")),
		exactjson.Field("arguments", exactjson.Object(exactjson.Field("topic", exactjson.String("cancelled"))))))
	switch {
	case err == nil:
		w.s.flows.add("report.generate cancelled mid-flight", "completed before the cancellation")
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled):
		w.s.flows.add("report.generate cancelled mid-flight", "ok (cancelled)")
	default:
		w.s.flows.add("report.generate cancelled mid-flight", "failed: "+flowErr(err))
	}
}

func (w *worker) listenFlow(ctx context.Context) {
	select {
	case w.s.listenSem <- struct{}{}:
	default:
		w.discover(ctx)
		return
	}
	defer func() { <-w.s.listenSem }()
	w.s.recentMu.Lock()
	ids := slices.Clone(w.s.recent)
	w.s.recentMu.Unlock()
	sub, err := w.tasks.Listen(ctx, client.ListenFilter{ToolsListChanged: true, TaskIDs: ids})
	if err != nil {
		w.s.flows.add("subscriptions/listen", "failed: "+flowErr(err))
		return
	}
	hold := time.NewTimer(time.Duration(500+w.rng.IntN(2500)) * time.Millisecond)
	defer hold.Stop()
	n := 0
	for done := false; !done; {
		select {
		case _, ok := <-sub.Notifications():
			if !ok {
				done = true
				continue
			}
			n++
		case <-hold.C:
			done = true
		}
	}
	_ = sub.Close()
	switch err := sub.Err(); {
	case err != nil:
		w.s.flows.add("subscriptions/listen", "ended with: "+flowErr(err))
	default:
		w.s.flows.add("subscriptions/listen", "ok")
	}
}

// taskFlow creates a report.generate task and drives it: poll, answer (or
// cancel) its input request, poll to the end. What is left when the load
// stops is finished by the drain phase.
func (w *worker) taskFlow(loadCtx context.Context) {
	s := w.s
	topic := fmt.Sprintf("soak-%d", s.topicSeq.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	res, err := w.tasks.Call(ctx, "tools/call", exactjson.Object(
		exactjson.Field("name", exactjson.String("report.generate")),
		exactjson.Field("arguments", exactjson.Object(exactjson.Field("topic", exactjson.String(topic))))))
	cancel()
	if err != nil {
		s.flows.add("report.generate task", "create failed: "+flowErr(err))
		return
	}
	id := str(res, "taskId")
	if str(res, "resultType") != "task" || id == "" {
		s.flows.add("report.generate task", "create: not a task")
		return
	}
	rec := s.tasks.add(id, topic)
	s.recentMu.Lock()
	s.recent = append(s.recent, id)
	if len(s.recent) > 8 {
		s.recent = s.recent[len(s.recent)-8:]
	}
	s.recentMu.Unlock()
	action := "charts"
	switch p := w.rng.IntN(100); {
	case p < 15:
		action = "cancel"
	case p < 45:
		action = "no-charts"
	}
	deadline := time.Now().Add(taskPhaseTimeout)
	for loadCtx.Err() == nil && time.Now().Before(deadline) {
		if done := w.s.step(w.tasks, rec, action); done {
			s.flows.add("report.generate task", "ok")
			return
		}
		select {
		case <-loadCtx.Done():
		case <-time.After(500 * time.Millisecond): // the pollIntervalMs the demo suggests
		}
	}
	s.flows.add("report.generate task", "left for the drain phase")
}

// step polls a task once and acts on it; it reports whether the task is
// terminal.
func (s *soak) step(c *client.Client, rec *taskRec, action string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	tk, err := c.GetTask(ctx, rec.id)
	if err != nil {
		return false
	}
	sn := snap(tk)
	if s.tasks.observe(rec, sn) {
		s.changed.Add(1)
		s.t.Errorf("task %s changed after it ended: %+v, first %s %q %s", rec.id, sn, rec.terminal, rec.result, rec.updatedAt)
	}
	if terminal(sn.status) {
		return true
	}
	if sn.status != client.TaskInputRequired {
		return false
	}
	s.tasks.mu.Lock()
	if rec.action == "" {
		rec.action = action
	}
	action = rec.action
	s.tasks.mu.Unlock()
	if action == "cancel" {
		_ = c.CancelTask(ctx, rec.id)
		return false
	}
	answer := exactjson.Object(exactjson.Field("charts", exactjson.Object(
		exactjson.Field("action", exactjson.String("accept")),
		exactjson.Field("content", exactjson.Object(exactjson.Field("charts", exactjson.Bool(action == "charts")))))))
	_ = c.UpdateTask(ctx, rec.id, answer)
	return false
}

func str(v exactjson.Value, name string) string {
	x, _ := v.Get(name)
	s, _ := x.AsString()
	return s
}

// ---------------------------------------------------------------------------
// The test

func TestSoak(t *testing.T) {
	if os.Getenv("WEFT_SOAK") == "" {
		t.Skip("the soak runs for minutes: set WEFT_SOAK=1 (make soak)")
	}
	cfg := loadConfig(t)
	setupStart := time.Now()
	// The soak's own cluster: stopped and removed last (cleanups run in
	// reverse), after the instances.
	pg := testpg.StartCluster(t)
	t.Logf("PostgreSQL: throwaway cluster on 127.0.0.1:%d (log %s)", pg.Port(), pg.LogPath())
	db := pg.OpenDB(t)
	s := &soak{t: t, cfg: cfg, stats: NewStats(), pg: pg, db: db, schema: testpg.Name("weft_soak"),
		tasks: registry{tasks: map[string]*taskRec{}}, flows: flows{counts: map[[2]string]int64{}},
		listenSem: make(chan struct{}, 20)}
	dir := t.TempDir()
	bin := filepath.Join(dir, "weft")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/weftmcp/weft/cmd/weft").CombinedOutput(); err != nil {
		t.Fatalf("building weft: %v\n%s", err, out)
	}
	keyring := filepath.Join(dir, "keyring.json")
	if out, err := exec.Command(bin, "keys", "generate", "--id", "soak-1", "--keyring", keyring).CombinedOutput(); err != nil {
		t.Fatalf("weft keys generate: %v\n%s", err, out)
	}
	logDir := os.Getenv("WEFT_SOAK_LOGS")
	if logDir == "" {
		logDir = dir
	}
	probe := &http.Client{Timeout: 2 * time.Second}
	ready := func(ctx context.Context, addr string) error { return readyProbe(ctx, probe, addr) }
	for _, name := range []string{"A", "B"} {
		addr := freeAddr(t)
		in := &instance{name: name, addr: addr, bin: bin, logPath: filepath.Join(logDir, "weft-"+name+".log"), ready: ready,
			args: []string{"--data", filepath.Join(dir, name), "--postgres", pg.DSN(), "--schema", s.schema,
				"--keyring", keyring, "--task-lease", taskLease.String()}}
		s.inst = append(s.inst, in)
	}
	for _, in := range s.inst {
		in.start(t)
		t.Cleanup(func() { in.stop(t) })
	}
	s.lb = &Balancer{Addrs: []string{s.inst[0].addr, s.inst[1].addr}}
	setup := time.Since(setupStart)

	runtime.GC()
	time.Sleep(200 * time.Millisecond)
	baseline := runtime.NumGoroutine()
	t.Logf("setup %s; goroutine baseline %d; instances %s and %s", setup.Round(time.Millisecond), baseline, s.inst[0].addr, s.inst[1].addr)

	// The load.
	s.start = time.Now()
	loadCtx, stopLoad := context.WithTimeout(context.Background(), cfg.duration)
	defer stopLoad()
	var wg sync.WaitGroup
	workers := make([]*worker, cfg.clients)
	for i := range workers {
		workers[i] = s.newWorker(uint64(i + 1))
		w := workers[i]
		wg.Go(func() {
			// Stagger the start over two seconds.
			select {
			case <-time.After(time.Duration(w.rng.IntN(2000)) * time.Millisecond):
			case <-loadCtx.Done():
			}
			w.run(loadCtx)
		})
	}
	// The faults, on a schedule relative to the duration (on the test
	// goroutine: restarting an instance may end the test).
	s.injectFaults(loadCtx)
	<-loadCtx.Done()
	wg.Wait()
	s.loadEnd = time.Now()
	t.Logf("load ended after %s: %d requests", s.loadEnd.Sub(s.start).Round(time.Millisecond), s.stats.Requests())

	// Drain: every task to a terminal state.
	orphans := s.drain(workers[0])
	// Final checks on each instance directly.
	verdict := s.verify(orphans)

	for _, w := range workers {
		w.close()
	}
	http.DefaultTransport.(*http.Transport).CloseIdleConnections()
	probe.CloseIdleConnections()
	end := baseline
	deadline := time.Now().Add(15 * time.Second)
	for {
		runtime.GC()
		end = runtime.NumGoroutine()
		if end <= baseline+goroutineSlack || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	verdict.goroutinesBase, verdict.goroutinesEnd = baseline, end
	if end > baseline+goroutineSlack {
		buf := make([]byte, 1<<20)
		n := runtime.Stack(buf, true)
		t.Errorf("goroutines: %d at the end, baseline %d\n%s", end, baseline, buf[:n])
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	verdict.clientHeap = ms.HeapInuse
	for _, in := range s.inst {
		if h := in.maxHWM(); h > rssCeiling {
			t.Errorf("instance %s: VmHWM %d MiB exceeds %d MiB", in.name, h>>20, rssCeiling>>20)
		}
	}
	verdict.setup = setup
	verdict.total = time.Since(setupStart)
	report := s.report(verdict)
	t.Log("\n" + report)
	path, err := writeReport(cfg.report, report)
	if err != nil {
		t.Errorf("writing the report: %v", err)
	} else {
		t.Logf("report written to %s", path)
	}
}

func freeAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// readyProbe sends server/discover outside the checked statistics.
func readyProbe(ctx context.Context, hc *http.Client, addr string) error {
	c := client.New(client.NewHTTPTransport("http://"+addr+"/mcp", &client.HTTPOptions{Client: hc}), nil)
	_, err := c.Discover(ctx)
	return err
}

// injectFaults restarts PostgreSQL, SIGTERMs A (and starts it again) and
// SIGKILLs B (and starts it again), each at a fixed fraction of the run.
func (s *soak) injectFaults(ctx context.Context) {
	t := s.t
	at := func(frac float64) bool {
		select {
		case <-time.After(time.Until(s.start.Add(time.Duration(frac * float64(s.cfg.duration))))):
			return true
		case <-ctx.Done():
			return false
		}
	}
	if !at(0.2) {
		return
	}
	if s.cfg.pgRestart {
		f := &fault{name: "PostgreSQL restart", start: time.Now()}
		rctx, rcancel := context.WithTimeout(context.Background(), 90*time.Second)
		err := s.pg.Restart(rctx)
		rcancel()
		ok := err == nil
		if err != nil {
			t.Errorf("PostgreSQL restart: %v", err)
		}
		// Wait until the database answers again.
		pctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		for pctx.Err() == nil && s.db.PingContext(pctx) != nil {
			time.Sleep(100 * time.Millisecond)
		}
		cancel()
		back := time.Now()
		f.end = back.Add(5 * time.Second) // pools and listeners reconnect
		f.detail = fmt.Sprintf("`pg_ctl restart -m fast` of the soak's own cluster; the database answered again after %s", back.Sub(f.start).Round(time.Millisecond))
		if !ok {
			f.detail += " (the command failed)"
		}
		s.faults.add(f)
	} else {
		s.faults.add(&fault{name: "PostgreSQL restart", detail: "skipped (WEFT_SOAK_PG_RESTART=off)"})
	}
	if !at(0.45) {
		return
	}
	a := s.inst[0]
	f := &fault{name: "SIGTERM A", start: time.Now()}
	inc := a.signal(t, syscall.SIGTERM, "SIGTERM", drainShutdown)
	if inc.exitCode != 0 {
		t.Errorf("A exited with code %d after SIGTERM (want a clean exit)", inc.exitCode)
	}
	a.start(t)
	f.end = time.Now().Add(2 * time.Second)
	f.detail = fmt.Sprintf("drained and exited (code %d) in %s; restarted, ready %s after the signal",
		inc.exitCode, inc.drain.Round(time.Millisecond), time.Since(f.start).Round(time.Millisecond))
	s.faults.add(f)
	if !at(0.7) {
		return
	}
	b := s.inst[1]
	// The tasks with a step running (leased) when B dies: B's share of them
	// is recovered by a lease takeover.
	if rows, err := s.db.Query(`SELECT id FROM "` + s.schema + `".weft_tasks WHERE status = 'working' AND lease_owner IS NOT NULL`); err == nil {
		for rows.Next() {
			var id string
			if rows.Scan(&id) == nil {
				s.leasedAtKill = append(s.leasedAtKill, id)
			}
		}
		rows.Close()
	}
	f = &fault{name: "SIGKILL B", start: time.Now()}
	if inc = b.signal(t, syscall.SIGKILL, "SIGKILL", 10*time.Second); inc.exitCode != -1 {
		t.Errorf("B exited with code %d after SIGKILL, want the signal's end (-1)", inc.exitCode)
	}
	b.start(t)
	f.end = time.Now().Add(taskLease + 3*time.Second)
	f.detail = fmt.Sprintf("killed with %d task steps running in the fleet; restarted, ready %s after the signal (task lease %s)",
		len(s.leasedAtKill), time.Since(f.start).Round(time.Millisecond), taskLease)
	s.faults.add(f)
}

// drain finds the tasks whose creation response was lost (orphans, from the
// database), then drives every task to a terminal state.
func (s *soak) drain(w *worker) int {
	t := s.t
	orphans := 0
	rows, err := s.db.Query(`SELECT id, params FROM "` + s.schema + `".weft_tasks`)
	if err != nil {
		t.Fatalf("reading the task table: %v", err)
	}
	for rows.Next() {
		var id string
		var params []byte
		if err := rows.Scan(&id, &params); err != nil {
			t.Fatal(err)
		}
		s.tasks.mu.Lock()
		_, known := s.tasks.tasks[id]
		s.tasks.mu.Unlock()
		if known {
			continue
		}
		var p struct {
			Arguments struct{ Topic string } `json:"arguments"`
		}
		_ = json.Unmarshal(params, &p)
		r := s.tasks.add(id, p.Arguments.Topic)
		r.orphan = true
		orphans++
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	rows.Close()
	deadline := time.Now().Add(drainTimeout)
	for {
		pending := 0
		for _, r := range s.tasks.all() {
			if r.terminal != "" {
				continue
			}
			action := r.action
			if action == "" {
				action = "charts"
			}
			if !s.step(w.tasks, r, action) {
				pending++
			}
		}
		if pending == 0 || time.Now().After(deadline) {
			if pending > 0 {
				t.Errorf("%d tasks still not terminal %s after the load", pending, drainTimeout)
			}
			return orphans
		}
		time.Sleep(300 * time.Millisecond)
	}
}

type verdict struct {
	created, completed, charts, noCharts, cancelled, failed int
	lost, wrong, duplicated, changed, orphans, recovered    int
	dbRows                                                  int
	goroutinesBase, goroutinesEnd                           int
	clientHeap                                              uint64
	setup, total                                            time.Duration
	problems                                                []string
}

// verify checks every task on both instances and in the database.
func (s *soak) verify(orphans int) verdict {
	t := s.t
	v := verdict{orphans: orphans, duplicated: s.tasks.dups}
	direct := map[string]*client.Client{}
	for _, in := range s.inst {
		tr := &http.Transport{}
		defer tr.CloseIdleConnections()
		hc := &http.Client{Transport: &Checker{Base: tr, Stats: s.stats, Fixed: in.addr}}
		direct[in.name] = client.New(client.NewHTTPTransport("http://"+in.addr+"/mcp", &client.HTTPOptions{Client: hc}), &client.Options{Capabilities: tasksCaps})
	}
	dbStatus := map[string]string{}
	rows, err := s.db.Query(`SELECT id, status FROM "` + s.schema + `".weft_tasks`)
	if err != nil {
		t.Fatalf("reading the task table: %v", err)
	}
	for rows.Next() {
		var id, st string
		if err := rows.Scan(&id, &st); err != nil {
			t.Fatal(err)
		}
		dbStatus[id] = st
	}
	rows.Close()
	v.dbRows = len(dbStatus)
	problem := func(format string, args ...any) {
		msg := fmt.Sprintf(format, args...)
		v.problems = append(v.problems, msg)
		t.Error(msg)
	}
	for _, r := range s.tasks.all() {
		v.created++
		wantStatus, wantText := r.want()
		wrong, lost := false, false
		var views []string
		for _, name := range []string{"A", "B"} {
			ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
			tk, err := direct[name].GetTask(ctx, r.id)
			cancel()
			if err != nil {
				wrong, lost = true, true
				views = append(views, fmt.Sprintf("%s: tasks/get failed: %v", name, err))
				continue
			}
			sn := snap(tk)
			if s.tasks.observe(r, sn) {
				v.changed++
				problem("task %s: %s shows %s %q %s, first seen %s %q %s", r.id, name, sn.status, sn.result, sn.updatedAt, r.terminal, r.result, r.updatedAt)
			}
			if sn.status != wantStatus || sn.result != wantText {
				wrong = true
			}
			views = append(views, fmt.Sprintf("%s: %s %q", name, sn.status, sn.result))
		}
		st, inDB := dbStatus[r.id]
		switch {
		case !inDB:
			wrong, lost = true, true
			views = append(views, "database: missing")
		case st != wantStatus:
			wrong = true
			views = append(views, "database: "+st)
		}
		if lost {
			v.lost++
		}
		if wrong {
			v.wrong++
			action := r.action
			if action == "" {
				action = "no input answered yet"
			}
			problem("task %s (%s, %s): want %s %q; %s", r.id, r.topic, action, wantStatus, wantText, strings.Join(views, "; "))
		}
		switch r.terminal {
		case "completed":
			v.completed++
			if r.action == "no-charts" {
				v.noCharts++
			} else {
				v.charts++
			}
		case "cancelled":
			v.cancelled++
		case "failed":
			v.failed++
		}
	}
	for _, id := range s.leasedAtKill {
		s.tasks.mu.Lock()
		r := s.tasks.tasks[id]
		s.tasks.mu.Unlock()
		if r == nil || r.terminal == "" {
			problem("task %s had a step running at the SIGKILL and did not end", id)
		} else {
			v.recovered++
		}
	}
	if len(dbStatus) != v.created {
		problem("the database holds %d tasks, the clients know %d", len(dbStatus), v.created)
	}
	if v.duplicated > 0 {
		problem("%d task creations returned an id already returned", v.duplicated)
	}
	v.changed += int(s.changed.Load())
	if n := classCount(s.stats, ClassMalformed); n > 0 {
		problem("%d malformed responses: %s", n, strings.Join(s.stats.Samples(), "\n"))
	}
	// A graceful drain never cuts an accepted request.
	for _, e := range s.stats.Events() {
		if e.Class == ClassCut && s.faults.window(e.At) != "SIGKILL B" {
			problem("%s: a response cut outside the SIGKILL window (%s): %s", e.At.Format("15:04:05.000"), s.faults.window(e.At), e.Detail)
		}
	}
	return v
}

func classCount(st *Stats, c Class) int64 {
	var n int64
	for _, x := range st.Counts() {
		if x.Class == string(c) {
			n += x.N
		}
	}
	return n
}
