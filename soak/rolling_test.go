package soak

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
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

// TestRollingRestart restarts three `weft serve` instances one after the
// other behind a real HAProxy (from the Debian package; make rolling
// installs it when missing) while clients keep calling through it: every
// request must succeed (none refused, none failed, no 503 the client has to
// retry) and every task created during the restarts must end exactly as
// asked. Each instance drains on SIGTERM (--drain-delay: /readyz reports
// 503 while it still serves, so HAProxy's health check takes it out of
// rotation), then shuts down, releasing its task leases to the others. The
// clients address the fleet by a name that only --allowed-hosts admits.
func TestRollingRestart(t *testing.T) {
	if os.Getenv("WEFT_ROLLING") == "" {
		t.Skip("the rolling restart starts HAProxy and three servers: set WEFT_ROLLING=1 (make rolling)")
	}
	haproxy, err := exec.LookPath("haproxy")
	if err != nil {
		t.Fatal("haproxy is not installed (scripts/ensure-haproxy.sh installs it from the Debian packages)")
	}
	const (
		fleetHost  = "mcp.fleet.internal"
		drainDelay = 1500 * time.Millisecond // > HAProxy's inter 200ms × fall 2, with a margin
		workers    = 12
	)
	pg := testpg.StartCluster(t)
	dir := t.TempDir()
	bin := filepath.Join(dir, "weft")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/weftmcp/weft/cmd/weft").CombinedOutput(); err != nil {
		t.Fatalf("building weft: %v\n%s", err, out)
	}
	keyring := filepath.Join(dir, "keyring.json")
	if out, err := exec.Command(bin, "keys", "generate", "--id", "rolling-1", "--keyring", keyring).CombinedOutput(); err != nil {
		t.Fatalf("weft keys generate: %v\n%s", err, out)
	}
	probe := &http.Client{Timeout: 2 * time.Second}
	ready := func(ctx context.Context, addr string) error {
		resp, err := probe.Get("http://" + addr + "/readyz")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("readyz: %d", resp.StatusCode)
		}
		return nil
	}
	schema := testpg.Name("weft_rolling")
	var inst []*instance
	for _, name := range []string{"A", "B", "C"} {
		in := &instance{name: name, addr: freeAddr(t), bin: bin, logPath: filepath.Join(dir, "weft-"+name+".log"), ready: ready,
			args: []string{"--data", filepath.Join(dir, name), "--postgres", pg.DSN(), "--schema", schema, "--keyring", keyring,
				"--task-lease", "30s", "--drain-delay", drainDelay.String(), "--allowed-hosts", fleetHost}}
		inst = append(inst, in)
	}
	for _, in := range inst {
		in.start(t)
		t.Cleanup(func() { in.stop(t) })
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, in := range inst {
				if b, err := os.ReadFile(in.logPath); err == nil {
					t.Logf("log of %s:\n%s", in.name, tail(string(b), 40))
				}
			}
		}
	})

	// HAProxy in front, health-checking /readyz.
	lbAddr := freeAddr(t)
	cfg := fmt.Sprintf(`global
	maxconn 4096
defaults
	mode http
	timeout connect 2s
	timeout client 60s
	timeout server 60s
	timeout http-keep-alive 2s
	option http-server-close
	# No retries: a request HAProxy sends to an instance that is going away
	# fails visibly. The drain is what keeps that from happening.
	retries 0
frontend fleet
	bind %s
	default_backend weft
backend weft
	balance roundrobin
	option httpchk GET /readyz
	http-check expect status 200
	default-server inter 200ms fall 2 rise 2
`, lbAddr)
	for _, in := range inst {
		cfg += fmt.Sprintf("\tserver %s %s check\n", in.name, in.addr)
	}
	cfgPath := filepath.Join(dir, "haproxy.cfg")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	lbLog, err := os.Create(filepath.Join(dir, "haproxy.log"))
	if err != nil {
		t.Fatal(err)
	}
	lb := exec.Command(haproxy, "-db", "-f", cfgPath)
	lb.Stdout, lb.Stderr = lbLog, lbLog
	if err := lb.Start(); err != nil {
		t.Fatalf("starting haproxy: %v", err)
	}
	t.Cleanup(func() { _ = lb.Process.Kill(); _ = lb.Wait(); lbLog.Close() })

	// Clients reach the fleet through HAProxy under the fleet's name.
	tr := &http.Transport{MaxIdleConnsPerHost: workers, IdleConnTimeout: 30 * time.Second}
	t.Cleanup(tr.CloseIdleConnections)
	hc := &http.Client{Transport: hostRewrite{host: fleetHost, base: tr}}
	url := "http://" + lbAddr + "/mcp"
	plain := client.New(client.NewHTTPTransport(url, &client.HTTPOptions{Client: hc}), &client.Options{Handlers: client.Handlers{Elicit: elicit}})
	tasks := client.New(client.NewHTTPTransport(url, &client.HTTPOptions{Client: hc}), &client.Options{Capabilities: tasksCaps, Handlers: client.Handlers{Elicit: elicit}})
	t.Cleanup(func() { _ = plain.Close(); _ = tasks.Close() })
	waitCtx, cancelWait := context.WithTimeout(context.Background(), readyTimeout)
	for {
		if _, err := plain.Discover(waitCtx); err == nil {
			break
		} else if waitCtx.Err() != nil {
			t.Fatalf("the fleet is not reachable through HAProxy: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	cancelWait()

	var (
		ok       atomic.Int64
		failMu   sync.Mutex
		failures []string
		taskMu   sync.Mutex
		created  = map[string]string{} // task id -> expected result text
		topicSeq atomic.Int64
	)
	fail := func(what string, err error) {
		failMu.Lock()
		failures = append(failures, fmt.Sprintf("%s %s: %v", time.Now().Format("15:04:05.000"), what, err))
		failMu.Unlock()
	}
	loadCtx, stopLoad := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := 0; loadCtx.Err() == nil; i++ {
				ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
				switch (w + i) % 8 {
				case 0, 4, 7: // two rounds with sealed state, possibly on two instances
					res, err := plain.CallTool(ctx, "catalog.continue", exactjson.Object())
					if err == nil && res.Text() != "Catalog access approved; continuing." {
						err = fmt.Errorf("wrong result %q", res.Text())
					}
					if err != nil {
						fail("catalog.continue", err)
					} else {
						ok.Add(1)
					}
				case 1, 5:
					if _, err := plain.Discover(ctx); err != nil {
						fail("server/discover", err)
					} else {
						ok.Add(1)
					}
				case 2, 6:
					if _, err := plain.Call(ctx, "tools/list", exactjson.Object()); err != nil {
						fail("tools/list", err)
					} else {
						ok.Add(1)
					}
				case 3: // a durable task
					topic := fmt.Sprintf("rolling-%d", topicSeq.Add(1))
					res, err := tasks.Call(ctx, "tools/call", exactjson.Object(
						exactjson.Field("name", exactjson.String("report.generate")),
						exactjson.Field("arguments", exactjson.Object(exactjson.Field("topic", exactjson.String(topic))))))
					if err != nil || str(res, "resultType") != "task" {
						fail("report.generate", fmt.Errorf("%v %v", err, res))
					} else {
						ok.Add(1)
						taskMu.Lock()
						created[str(res, "taskId")] = "Report on " + topic + " with charts."
						taskMu.Unlock()
					}
				}
				cancel()
				select {
				case <-loadCtx.Done():
				case <-time.After(50 * time.Millisecond):
				}
			}
		})
	}
	// Tasks are answered as they ask, whichever instance runs them.
	answerTasks := func(ctx context.Context) (pending int) {
		taskMu.Lock()
		ids := make([]string, 0, len(created))
		for id := range created {
			ids = append(ids, id)
		}
		taskMu.Unlock()
		for _, id := range ids {
			tk, err := tasks.GetTask(ctx, id)
			if err != nil {
				fail("tasks/get "+id, err)
				pending++
				continue
			}
			switch tk.Status {
			case client.TaskInputRequired:
				answer := exactjson.Object(exactjson.Field("charts", exactjson.Object(
					exactjson.Field("action", exactjson.String("accept")),
					exactjson.Field("content", exactjson.Object(exactjson.Field("charts", exactjson.Bool(true)))))))
				if err := tasks.UpdateTask(ctx, id, answer); err != nil {
					fail("tasks/update "+id, err)
				}
				pending++
			case client.TaskWorking:
				pending++
			}
		}
		return pending
	}
	stopAnswers := make(chan struct{})
	answersDone := make(chan struct{})
	go func() {
		defer close(answersDone)
		for {
			select {
			case <-stopAnswers:
				return
			case <-time.After(300 * time.Millisecond):
			}
			ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
			answerTasks(ctx)
			cancel()
		}
	}()

	// The rolling restart, under load.
	time.Sleep(2 * time.Second)
	db := pg.OpenDB(t)
	for _, in := range inst {
		before := ok.Load()
		inc := in.signal(t, syscall.SIGTERM, "SIGTERM", drainShutdown)
		if inc.exitCode != 0 {
			t.Errorf("%s exited with code %d after SIGTERM", in.name, inc.exitCode)
		}
		// The stopped instance holds no lease: steps it had to cut off are
		// released to the others at once, not after the 30s lease.
		var held int
		if err := db.QueryRow(`SELECT count(*) FROM `+schema+`.weft_tasks WHERE status = 'working' AND lease_owner LIKE $1`,
			fmt.Sprintf("weft-%%-%d", inc.pid)).Scan(&held); err != nil {
			t.Errorf("reading leases: %v", err)
		} else if held != 0 {
			t.Errorf("%s exited still holding %d task leases", in.name, held)
		}
		t.Logf("%s drained and stopped in %s (%d requests served meanwhile)", in.name, inc.drain.Round(time.Millisecond), ok.Load()-before)
		in.start(t)
		time.Sleep(1 * time.Second) // HAProxy: rise 2 × inter 200ms, with a margin
	}
	time.Sleep(2 * time.Second)
	stopLoad()
	wg.Wait()

	// Every task to its end.
	deadline := time.Now().Add(drainTimeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		pending := answerTasks(ctx)
		cancel()
		if pending == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(300 * time.Millisecond)
	}
	close(stopAnswers)
	<-answersDone
	taskMu.Lock()
	defer taskMu.Unlock()
	done := 0
	for id, want := range created {
		ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		tk, err := tasks.GetTask(ctx, id)
		cancel()
		switch {
		case err != nil:
			t.Errorf("task %s lost: %v", id, err)
		case snap(tk).status != client.TaskCompleted || snap(tk).result != want:
			t.Errorf("task %s ended %s %q, want completed %q", id, snap(tk).status, snap(tk).result, want)
		default:
			done++
		}
	}
	failMu.Lock()
	defer failMu.Unlock()
	t.Logf("%d requests succeeded through HAProxy across the restart of %d instances; %d tasks completed; %d failures",
		ok.Load(), len(inst), done, len(failures))
	for _, f := range failures {
		t.Errorf("request failed: %s", f)
	}
	if ok.Load() < 100 || len(created) < 10 {
		t.Errorf("too little load to show anything: %d requests, %d tasks", ok.Load(), len(created))
	}
}

// hostRewrite sends every request with the given Host header.
type hostRewrite struct {
	host string
	base http.RoundTripper
}

func (h hostRewrite) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Host = h.host
	return h.base.RoundTrip(r)
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
