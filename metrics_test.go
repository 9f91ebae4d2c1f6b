package weft

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/weftmcp/weft/metrics"
	"github.com/weftmcp/weft/task"
)

// scrape is one parsed Prometheus text exposition: series -> value, where a
// series is name{k="v",...} with labels sorted.
type scrape map[string]float64

var sampleLine = regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$`)
var labelPair = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"`)

func scrapeMetrics(t testing.TB, url, token string) scrape {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	must(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	must(t, err)
	defer res.Body.Close()
	if res.StatusCode != 200 {
		b, _ := io.ReadAll(res.Body)
		t.Fatalf("scrape: HTTP %d: %s", res.StatusCode, b)
	}
	out := scrape{}
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		m := sampleLine.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("unparsable exposition line %q", line)
		}
		v, err := strconv.ParseFloat(m[4], 64)
		must(t, err)
		out[series(m[1], labelPairs(m[3]))] = v
	}
	must(t, sc.Err())
	return out
}

func labelPairs(s string) map[string]string {
	out := map[string]string{}
	for _, p := range labelPair.FindAllStringSubmatch(s, -1) {
		out[p[1]] = p[2]
	}
	return out
}

// series renders name{labels} with sorted labels, dropping empty values
// (Prometheus treats an empty label as absent).
func series(name string, labels map[string]string) string {
	keys := make([]string, 0, len(labels))
	for k, v := range labels {
		if v != "" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var sb strings.Builder
	sb.WriteString(name + "{")
	for i, k := range keys {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, "%s=%q", k, labels[k])
	}
	sb.WriteString("}")
	return sb.String()
}

// want returns the value of one series ("missing" fails the lookup).
func (s scrape) get(name string, labels map[string]string) (float64, bool) {
	v, ok := s[series(name, labels)]
	return v, ok
}

type L = map[string]string

// TestMetricsScrapeAfterMixedWorkload runs complete, input_required, task,
// application-error, protocol-error, tampered-state and unparsable requests
// and checks the counts on the Prometheus endpoint.
func TestMetricsScrapeAfterMixedWorkload(t *testing.T) {
	mp, handler, err := metrics.NewPrometheus(prometheus.NewRegistry())
	must(t, err)
	store := task.NewMemoryStore(nil)
	t.Cleanup(func() { _ = store.Close() })
	f := newStateFixture(t, &Options{MeterProvider: mp, Tasks: &TaskOptions{Store: store, PollInterval: 10 * time.Millisecond}})
	t.Cleanup(func() { _ = f.s.Shutdown(context.Background()) })
	release := make(chan struct{})
	must(t, f.s.AddTool(Tool{Name: "job", Description: "Runs as a task.", Task: TaskOptional},
		func(ctx context.Context, req *Request) (*CallToolResult, error) {
			if req.Task() == nil {
				return nil, RunAsTask(nil)
			}
			select {
			case <-release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return textResult("done"), nil
		}))
	must(t, f.s.AddTool(Tool{Name: "refuse", Description: "Fails with an application error."},
		func(ctx context.Context, req *Request) (*CallToolResult, error) {
			return nil, NewError(4001, "Quota exceeded")
		}))
	addText(t, f.s, "hello", "hi")
	f.serveHTTP(t)
	ms := startHTTP(t, handler)

	// complete x2 (hello), input_required x2 + complete x1 (flow), tampered state.
	for i := range 2 {
		if r := f.call(t, "/mcp", 100+i, "hello", nil, nil); r.result(t)["resultType"] != "complete" {
			t.Fatalf("hello: %v", r)
		}
	}
	tok := tokenOf(t, f.call(t, "/mcp", 1, "flow", nil, nil))
	tokenOf(t, f.call(t, "/mcp", 2, "flow", nil, nil))
	if r := f.retry(t, "/mcp", 3, "flow", nil, tok); r.result(t)["resultType"] != "complete" {
		t.Fatalf("retry: %v", r)
	}
	mid := len(tok) / 2
	flip := byte('A')
	if tok[mid] == 'A' {
		flip = 'B'
	}
	tampered := tok[:mid] + string(flip) + tok[mid+1:]
	f.retry(t, "/mcp", 4, "flow", nil, tampered).wantError(t, 400, CodeInvalidParams)
	// application error, unknown tool, unparsable body.
	f.call(t, "/mcp", 5, "refuse", nil, nil).wantError(t, 200, 4001)
	f.call(t, "/mcp", 6, "no-such-tool", nil, nil).wantError(t, 400, CodeInvalidParams)
	if r := post(t, f.url+"/mcp", []byte(`{"jsonrpc":`), stdHeaders(nil)); r.Status != 400 {
		t.Fatalf("unparsable body: %v", r)
	}
	// a task, held running while a listen stream is open.
	tr := f.send(t, "/mcp", 7, "tools/call", toolCall(tasksCaps, "job", nil))
	if tr.result(t)["resultType"] != "task" {
		t.Fatalf("job: %v", tr)
	}
	listen(t, f.url+"/mcp", "sub-1", M{"toolsListChanged": true})

	var sc scrape
	poll := func(what string, ok func(scrape) bool) {
		t.Helper()
		deadline := time.Now().Add(hangGuard)
		for {
			sc = scrapeMetrics(t, ms.URL+"/metrics", "")
			if ok(sc) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("hang guard: %s; scrape:\n%s", what, dump(sc, "weft_"))
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	poll("the task step holds a lease and the stream is open", func(sc scrape) bool {
		l, _ := sc.get("weft_task_leases", nil)
		o, _ := sc.get("weft_subscriptions_open", nil)
		w, _ := sc.get("weft_tasks", L{"status": "working"})
		return l == 1 && o == 1 && w == 1
	})
	close(release)
	poll("the task step finished", func(sc scrape) bool {
		n, _ := sc.get("weft_task_steps_total", L{"name": "job", "result": "completed"})
		w, _ := sc.get("weft_tasks", L{"status": "working"})
		l, _ := sc.get("weft_task_leases", nil)
		return n == 1 && w == 0 && l == 0
	})

	req := func(method, outcome, name, code string) L {
		return L{"method": method, "outcome": outcome, "name": name, "code": code}
	}
	for _, c := range []struct {
		name   string
		labels L
		want   float64
	}{
		{"weft_requests_total", req("tools/call", "complete", "hello", ""), 2},
		{"weft_requests_total", req("tools/call", "input_required", "flow", ""), 2},
		{"weft_requests_total", req("tools/call", "complete", "flow", ""), 1},
		{"weft_requests_total", req("tools/call", "protocol_error", "flow", "-32602"), 1},
		{"weft_requests_total", req("tools/call", "application_error", "refuse", "4001"), 1},
		{"weft_requests_total", req("tools/call", "protocol_error", "", "-32602"), 1},
		{"weft_requests_total", req("invalid", "protocol_error", "", "-32700"), 1},
		{"weft_requests_total", req("tools/call", "task", "job", ""), 1},
		{"weft_request_duration_seconds_count", L{"method": "tools/call", "outcome": "input_required", "name": "flow"}, 2},
		{"weft_request_duration_seconds_count", L{"method": "tools/call", "outcome": "complete", "name": "hello"}, 2},
		{"weft_request_duration_seconds_bucket", L{"method": "tools/call", "outcome": "complete", "name": "hello", "le": "+Inf"}, 2},
		{"weft_state_opens_total", L{"mode": "framework", "result": "ok"}, 1},
		{"weft_state_opens_total", L{"mode": "framework", "result": "failed"}, 1},
		{"weft_state_open_failures_total", L{"reason": "auth_failed"}, 1},
		{"weft_state_seals_total", L{"result": "ok"}, 2},
		{"weft_keyring_info", L{"active_key_id": "test-1", "fingerprint": f.mgr.Snapshot().Fingerprint.String(), "ephemeral": "false"}, 1},
		{"weft_keyring_verification_keys", nil, 0},
		{"weft_tasks", L{"status": "input_required"}, 0},
		{"weft_requests_active", nil, 0},
		{"weft_requests_queued", nil, 0},
		{"weft_task_step_duration_seconds_count", L{"name": "job", "result": "completed"}, 1},
	} {
		if got, ok := sc.get(c.name, c.labels); !ok || got != c.want {
			t.Errorf("%s = %v (present %v), want %v", series(c.name, c.labels), got, ok, c.want)
		}
	}
	// The listen stream is counted once acknowledged: over HTTP/1.1 it is
	// detached then, and its request is complete (listen_detached.go).
	total := 0.0
	for k, v := range sc {
		if strings.HasPrefix(k, "weft_requests_total{") {
			total += v
		}
	}
	if total != 11 {
		t.Errorf("weft_requests_total sums to %v, want 11:\n%s", total, dump(sc, "weft_requests_total"))
	}
	if t.Failed() || testing.Verbose() {
		t.Logf("scrape:\n%s", dump(sc, "weft_"))
	}
}

func dump(sc scrape, prefix string) string {
	var lines []string
	for k, v := range sc {
		if strings.HasPrefix(k, prefix) && !strings.Contains(k, "_bucket{") {
			lines = append(lines, fmt.Sprintf("%s %v", k, v))
		}
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}
