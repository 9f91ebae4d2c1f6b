package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weftmcp/weft/internal/partners"
)

// everythingCommand is the --command starting server-everything over
// stdio, a server speaking only the 2025 era.
func everythingCommand(t *testing.T) string {
	return strings.Join(partners.Everything(t), " ")
}

// TestCLIAgainstEverything drives the CLI against server-everything over
// stdio and HTTP, unpinned: it falls back to initialize (before, discover
// failed with -32601 on stdio and every command failed "Server not
// initialized" over HTTP), the list commands declare what weft call can
// answer (server-everything registers its elicitation, sampling and roots
// tools only for clients declaring them), and pinned to 2026-07-28 the
// error names the era the server speaks.
func TestCLIAgainstEverything(t *testing.T) {
	targets := map[string][]string{
		"stdio": {"--command", everythingCommand(t)},
		"http":  {partners.EverythingHTTP(t)},
	}
	for name, target := range targets {
		t.Run(name, func(t *testing.T) {
			with := func(args ...string) []string {
				return append(append([]string{args[0]}, target...), args[1:]...)
			}
			out := runWeftStdout(t, with("discover")...)
			if !strings.Contains(out, "versions      2025-11-25") {
				t.Errorf("weft discover: %q", out)
			}
			tools := runWeftStdout(t, with("tools")...)
			for _, tool := range []string{"echo", "trigger-elicitation-request", "trigger-sampling-request", "get-roots-list"} {
				if !regexp.MustCompile(`(?m)^` + tool + ` `).MatchString(tools) {
					t.Errorf("weft tools does not list %s:\n%s", tool, tools)
				}
			}
			if out := runWeftStdout(t, with("call", "echo", "--args", `{"message":"hi"}`)...); !strings.Contains(out, "Echo: hi") {
				t.Errorf("weft call echo: %q", out)
			}
			if out := runWeftStdout(t, with("call", "get-roots-list")...); !strings.Contains(out, "working directory") {
				t.Errorf("weft call get-roots-list: %q", out)
			}
			cmd := exec.Command(weftBin, with("tools", "--protocol", "2026-07-28")...)
			pinned, err := cmd.CombinedOutput()
			if err == nil || !strings.Contains(string(pinned), "speaks only the 2025 era") || !strings.Contains(string(pinned), "--protocol 2025-11-25") {
				t.Errorf("weft tools --protocol 2026-07-28: %v\n%s", err, pinned)
			}
		})
	}
}

// wireLog is a reverse proxy recording the JSON-RPC bodies posted to an
// HTTP server.
type wireLog struct {
	mu     sync.Mutex
	bodies []string
}

func (w *wireLog) proxy(t *testing.T, target string) string {
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: u.Scheme, Host: u.Host})
	rp.FlushInterval = -1
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			b, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(b))
			w.mu.Lock()
			w.bodies = append(w.bodies, string(b))
			w.mu.Unlock()
		}
		rp.ServeHTTP(rw, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + u.Path
}

func (w *wireLog) text() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.Join(w.bodies, "\n")
}

// interrupt starts weft with args, waits until its output shows want,
// sends SIGINT, and returns its whole output once it exits (failing if it
// does not within 20 seconds).
func interrupt(t *testing.T, stdin io.Reader, want string, args ...string) string {
	t.Helper()
	cmd := exec.Command(weftBin, args...)
	cmd.Stdin = stdin
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { err := cmd.Wait(); pw.Close(); done <- err }()
	var out strings.Builder
	r := bufio.NewReader(pr)
	seen := make(chan struct{})
	go func() {
		defer close(seen)
		for {
			b, err := r.ReadByte()
			if err != nil {
				return
			}
			out.WriteByte(b)
			if strings.Contains(out.String(), want) {
				return
			}
		}
	}()
	select {
	case <-seen:
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("weft %s never showed %q", strings.Join(args, " "), want)
	}
	if !strings.Contains(out.String(), want) {
		t.Fatalf("weft %s ended before showing %q: %s", strings.Join(args, " "), want, out.String())
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	rest := make(chan []byte, 1)
	go func() { b, _ := io.ReadAll(r); rest <- b }()
	select {
	case err := <-done:
		if err == nil {
			t.Errorf("weft exited 0 after SIGINT")
		}
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("weft did not exit within 20s of SIGINT: %s", out.String())
	}
	return out.String() + string(<-rest)
}

// TestCLIInterruptCancels: Ctrl-C (SIGINT) during weft call tells the
// server: notifications/cancelled for the request in flight over stdio and
// over 2025-era HTTP (before, the process died silently).
func TestCLIInterruptCancels(t *testing.T) {
	long := []string{"trigger-long-running-operation", "--args", `{"duration":60,"steps":60}`}
	t.Run("stdio", func(t *testing.T) {
		log := filepath.Join(t.TempDir(), "stdin.log")
		command := "sh -c 'tee " + log + " | exec " + everythingCommand(t) + "'"
		out := interrupt(t, nil, "[#", append([]string{"call", "--command", command}, long...)...)
		if !strings.Contains(out, "interrupted") {
			t.Errorf("output after SIGINT: %q", out)
		}
		b, _ := os.ReadFile(log)
		assertCancelled(t, string(b))
	})
	t.Run("http", func(t *testing.T) {
		w := &wireLog{}
		u := w.proxy(t, partners.EverythingHTTP(t))
		interrupt(t, nil, "[#", append([]string{"call", u}, long...)...)
		assertCancelled(t, w.text())
	})
}

// assertCancelled checks that the client's messages hold a
// notifications/cancelled naming the tools/call's id.
func assertCancelled(t *testing.T, wire string) {
	t.Helper()
	call := regexp.MustCompile(`"id":(\d+),"method":"tools/call"`).FindStringSubmatch(wire)
	if call == nil {
		t.Fatalf("no tools/call on the wire:\n%s", wire)
	}
	if !regexp.MustCompile(`"method":"notifications/cancelled","params":\{"requestId":` + call[1] + `\b`).MatchString(wire) {
		t.Errorf("no notifications/cancelled for request %s:\n%s", call[1], wire)
	}
}

// TestCLITasks: weft call on a durable task shows the task's id with the
// command following it; Ctrl-C cancels the task with tasks/cancel; a
// closed standard input leaves the task waiting for its answer instead of
// cancelling it; and with --json, standard output is one JSON value (jq
// reads it) while the questions, progress and task status go to standard
// error.
func TestCLITasks(t *testing.T) {
	addr := freeAddr(t)
	startServe(t, "--addr", addr, "--data", t.TempDir())
	waitPort(t, addr)
	u := "http://" + addr + "/mcp"
	report := []string{"call", u, "report.generate", "--args", `{"topic":"tides"}`}
	idOf := func(out string) string {
		m := regexp.MustCompile(`task (\S+) started; follow it from elsewhere with: weft task follow ` + regexp.QuoteMeta(u) + ` (\S+)`).FindStringSubmatch(out)
		if m == nil || m[1] != m[2] {
			t.Fatalf("the task's id and follow command are not shown: %q", out)
		}
		return m[1]
	}
	status := func(id string) string {
		var tk struct {
			Status string `json:"status"`
		}
		out := runWeftStdout(t, "task", "get", u, id, "--json")
		if err := json.Unmarshal([]byte(out), &tk); err != nil {
			t.Fatalf("weft task get --json: %v: %q", err, out)
		}
		return tk.Status
	}

	t.Run("interrupt", func(t *testing.T) {
		out := interrupt(t, nil, "follow it from elsewhere", report...)
		id := idOf(out)
		if !strings.Contains(out, "interrupted: task "+id+" was cancelled") {
			t.Errorf("output: %q", out)
		}
		if s := status(id); s != "cancelled" {
			t.Errorf("task %s is %s after SIGINT, want cancelled", id, s)
		}
	})

	t.Run("stdin closed", func(t *testing.T) {
		cmd := exec.Command(weftBin, report...)
		cmd.Stdin = strings.NewReader("")
		out, err := cmd.CombinedOutput()
		if err == nil {
			t.Fatalf("weft call with no answers succeeded: %s", out)
		}
		id := idOf(string(out))
		if !strings.Contains(string(out), "still waits for input") {
			t.Errorf("output: %q", out)
		}
		if s := status(id); s != "input_required" {
			t.Errorf("task %s is %s, want input_required (left waiting)", id, s)
		}
	})

	t.Run("json", func(t *testing.T) {
		text, stderr := callJSON(t, "a\nyes\n", append(report, "--json")...)
		if !strings.Contains(text, "Report on tides with charts.") {
			t.Errorf("result: %s", text)
		}
		idOf(stderr)
		if !strings.Contains(stderr, "Charts (yes/no") {
			t.Errorf("the question is not on stderr: %q", stderr)
		}
	})
}

// TestCLIJSONWithProgress: weft call --json on a tool reporting progress
// writes one JSON value on standard output; the progress bar goes to
// standard error.
func TestCLIJSONWithProgress(t *testing.T) {
	text, stderr := callJSON(t, "", "call", "--command", everythingCommand(t), "trigger-long-running-operation",
		"--args", `{"duration":1,"steps":3}`, "--json")
	if !strings.Contains(text, "completed") {
		t.Errorf("result: %s", text)
	}
	if !strings.Contains(stderr, "[#") {
		t.Errorf("no progress on stderr: %q", stderr)
	}
}

// callJSON runs weft call --json with stdin, checks that standard output
// is one JSON value, a tool result, and returns its first text block and
// standard error.
func callJSON(t *testing.T, stdin string, args ...string) (text, stderr string) {
	t.Helper()
	cmd := exec.Command(weftBin, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var errOut strings.Builder
	cmd.Stderr = &errOut
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("weft call --json: %v\n%s%s", err, out, errOut.String())
	}
	var res struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	oneJSON(t, out, &res)
	if len(res.Content) == 0 {
		t.Fatalf("no content: %s", out)
	}
	return res.Content[0].Text, errOut.String()
}

// oneJSON checks that out is exactly one JSON value (as `jq .` needs it,
// and jq itself reads it when installed) and decodes it into v.
func oneJSON(t *testing.T, out []byte, v any) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(out))
	if err := dec.Decode(v); err != nil {
		t.Fatalf("stdout is not JSON: %v: %q", err, out)
	}
	var more json.RawMessage
	if err := dec.Decode(&more); err != io.EOF {
		t.Fatalf("stdout holds more than one JSON value: %q", out)
	}
	if jq, err := exec.LookPath("jq"); err == nil {
		cmd := exec.Command(jq, "-e", ".")
		cmd.Stdin = bytes.NewReader(out)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("jq .: %v: %s", err, b)
		}
	}
}
