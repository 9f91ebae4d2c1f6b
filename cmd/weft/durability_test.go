package main

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weftmcp/weft/client"
	"github.com/weftmcp/weft/exactjson"
	"github.com/weftmcp/weft/internal/testpg"
)

// serveProc is a `weft serve` subprocess the test can kill.
type serveProc struct {
	cmd  *exec.Cmd
	addr string
}

func spawnServe(t *testing.T, addr string, args ...string) *serveProc {
	t.Helper()
	cmd := exec.Command(weftBin, append([]string{"serve", "--addr", addr}, args...)...)
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &serveProc{cmd: cmd, addr: addr}
	t.Cleanup(func() { p.stop() })
	waitPort(t, addr)
	return p
}

func (p *serveProc) kill() { _ = p.cmd.Process.Kill(); _ = p.cmd.Wait() }

func (p *serveProc) stop() {
	if p.cmd.ProcessState != nil {
		return
	}
	_ = p.cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { _ = p.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		_ = p.cmd.Process.Kill()
	}
}

var tasksCaps = exactjson.Object(
	exactjson.Field("elicitation", exactjson.Object()),
	exactjson.Field("extensions", exactjson.Object(exactjson.Field("io.modelcontextprotocol/tasks", exactjson.Object()))))

func taskClient(t *testing.T, addr string) *client.Client {
	t.Helper()
	c := client.New(client.NewHTTPTransport("http://"+addr+"/mcp", nil), &client.Options{Capabilities: tasksCaps})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// startReport creates a report.generate task and returns its id.
func startReport(t *testing.T, c *client.Client, topic string) string {
	t.Helper()
	res, err := c.Call(context.Background(), "tools/call", exactjson.Object(
		exactjson.Field("name", exactjson.String("report.generate")),
		exactjson.Field("arguments", exactjson.Object(exactjson.Field("topic", exactjson.String(topic))))))
	if err != nil {
		t.Fatal(err)
	}
	if rt, _ := res.Get("resultType"); !exactjson.Equal(rt, exactjson.String("task")) {
		t.Fatalf("not a task: %s", res)
	}
	id, _ := res.Get("taskId")
	s, _ := id.AsString()
	return s
}

func taskGet(t *testing.T, c *client.Client, id string) exactjson.Value {
	t.Helper()
	res, err := c.Call(context.Background(), "tasks/get", exactjson.Object(exactjson.Field("taskId", exactjson.String(id))))
	if err != nil {
		t.Fatalf("tasks/get: %v", err)
	}
	return res
}

func status(v exactjson.Value) string {
	s, _ := v.Get("status")
	str, _ := s.AsString()
	return str
}

// waitStatus polls until the task reaches want (or a terminal status).
func waitStatus(t *testing.T, c func() *client.Client, id, want string, within time.Duration) exactjson.Value {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		v := taskGet(t, c(), id)
		st := status(v)
		if st == want {
			return v
		}
		if st == "completed" || st == "failed" || st == "cancelled" || time.Now().After(deadline) {
			t.Fatalf("task %s: status %s, want %s: %s", id, st, want, v)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitCollecting waits until the first step of report task id runs: its
// status message says it is collecting data.
func waitCollecting(t *testing.T, c *client.Client, id string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		v := taskGet(t, c, id)
		if msg, _ := v.Get("statusMessage"); strings.Contains(msg.String(), "collecting data") {
			if st := status(v); st != "working" {
				t.Fatalf("task %s collecting data: status %s, want working", id, st)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %s: the step never ran: %s", id, v)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func answerCharts(t *testing.T, c *client.Client, id string) {
	t.Helper()
	_, err := c.Call(context.Background(), "tasks/update", exactjson.Object(
		exactjson.Field("taskId", exactjson.String(id)),
		exactjson.Field("inputResponses", exactjson.Object(exactjson.Field("charts", exactjson.Object(
			exactjson.Field("action", exactjson.String("accept")),
			exactjson.Field("content", exactjson.Object(exactjson.Field("charts", exactjson.Bool(true))))))))))
	if err != nil {
		t.Fatalf("tasks/update: %v", err)
	}
}

func resultText(v exactjson.Value) string {
	r, _ := v.Get("result")
	c, _ := r.Get("content")
	tx, _ := c.Index(0).Get("text")
	s, _ := tx.AsString()
	return s
}

// TestTaskSurvivesSIGKILL: a server on SQLite is killed with SIGKILL in the
// middle of a task step; after a restart the step is re-run, the task asks
// for its input and completes with its result intact.
func TestTaskSurvivesSIGKILL(t *testing.T) {
	data := t.TempDir()
	addr := freeAddr(t)
	args := []string{"--data", data, "--task-lease", "1s"}
	p := spawnServe(t, addr, args...)
	c := taskClient(t, addr)
	id := startReport(t, c, "crashes")
	waitCollecting(t, c, id) // the first step is running: killed in its middle
	p.kill()

	spawnServe(t, addr, args...)
	c2 := taskClient(t, addr)
	get := func() *client.Client { return c2 }
	waitStatus(t, get, id, "input_required", 30*time.Second)
	answerCharts(t, c2, id)
	done := waitStatus(t, get, id, "completed", 30*time.Second)
	if got := resultText(done); got != "Report on crashes with charts." {
		t.Fatalf("result after the crash: %q (%s)", got, done)
	}
}

// TestFleetOnPostgres: two server processes on one PostgreSQL database and
// one keyring. A task created through one is polled, given input and
// cancelled through the other; a worker killed on one instance is taken over
// by the other after its lease.
func TestFleetOnPostgres(t *testing.T) {
	testpg.Open(t) // fails in CI when PostgreSQL is missing
	dsn := testpg.DSN()
	schema := testpg.Name("weft_fleet")
	t.Cleanup(func() {
		db := testpg.Open(t)
		_, _ = db.Exec(`DROP SCHEMA IF EXISTS "` + schema + `" CASCADE`)
	})
	dir := t.TempDir()
	keyring := filepath.Join(dir, "keyring.json")
	runWeft(t, "keys", "generate", "--id", "fleet-1", "--keyring", keyring)
	common := []string{"--postgres", dsn, "--schema", schema, "--keyring", keyring, "--task-lease", "2s"}
	addrA, addrB := freeAddr(t), freeAddr(t)
	a := spawnServe(t, addrA, append([]string{"--data", filepath.Join(dir, "a")}, common...)...)
	ca := taskClient(t, addrA)

	// A worker killed on A is taken over by B within its lease.
	id := startReport(t, ca, "takeover")
	waitCollecting(t, ca, id) // A's worker holds the step
	a.kill()
	spawnServe(t, addrB, append([]string{"--data", filepath.Join(dir, "b")}, common...)...)
	cb := taskClient(t, addrB)
	getB := func() *client.Client { return cb }
	waitStatus(t, getB, id, "input_required", 20*time.Second)
	answerCharts(t, cb, id)
	if got := resultText(waitStatus(t, getB, id, "completed", 20*time.Second)); got != "Report on takeover with charts." {
		t.Fatalf("taken-over task: %q", got)
	}

	// A comes back; tasks move freely between the two.
	spawnServe(t, addrA, append([]string{"--data", filepath.Join(dir, "a")}, common...)...)
	ca = taskClient(t, addrA)
	getA := func() *client.Client { return ca }
	id2 := startReport(t, ca, "fleet")
	waitStatus(t, getB, id2, "input_required", 20*time.Second)
	answerCharts(t, cb, id2)
	if got := resultText(waitStatus(t, getA, id2, "completed", 20*time.Second)); got != "Report on fleet with charts." {
		t.Fatalf("fleet task: %q", got)
	}
	id3 := startReport(t, cb, "cancelled")
	waitStatus(t, getA, id3, "input_required", 20*time.Second)
	if _, err := ca.Call(context.Background(), "tasks/cancel", exactjson.Object(exactjson.Field("taskId", exactjson.String(id3)))); err != nil {
		t.Fatal(err)
	}
	if st := status(taskGet(t, cb, id3)); st != "cancelled" {
		t.Fatalf("cancelled through A, seen through B: %s", st)
	}
}
