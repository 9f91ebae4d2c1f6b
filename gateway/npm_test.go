package gateway_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weftmcp/weft"
	"github.com/weftmcp/weft/client"
	"github.com/weftmcp/weft/elicit"
	"github.com/weftmcp/weft/exactjson"

	"github.com/weftmcp/weft/gateway"
	"github.com/weftmcp/weft/internal/partners"
	"github.com/weftmcp/weft/internal/testpg"
)

// Third-party MCP servers from npm (internal/partners/npm), installed
// once per machine: the TypeScript SDK's reference servers, speaking
// 2025-11-25. In CI a missing node or npm fails the test.

// npmServer returns the entry script of the installed npm package pkg
// (its package.json "bin") and the node binary.
func npmServer(t *testing.T, pkg, script string) (node, entry string) {
	t.Helper()
	return partners.NPM(t, pkg, script)
}

// everythingStdio is server-everything as a stdio upstream.
func everythingStdio(t *testing.T, name string) gateway.UpstreamConfig {
	node, entry := npmServer(t, "@modelcontextprotocol/server-everything", "dist/index.js")
	return gateway.UpstreamConfig{Name: name, Command: node, Args: []string{entry, "stdio"}, Protocol: gateway.Version20251125}
}

// waitTool waits until the gateway lists tool name (server-everything
// registers some tools once it knows the client's capabilities).
func waitTool(t *testing.T, ctx context.Context, c *client.Client, name string) {
	t.Helper()
	waitFor(t, "tool "+name, func() bool {
		res, err := c.Call(ctx, "tools/list", exactjson.Object())
		return err == nil && strings.Contains(res.String(), `"name":"`+name+`"`)
	})
}

// server-everything over stdio behind the gateway (issue 25 D1, issue 27
// item 4): its roots/list right after initialize gets the configured roots
// (it was refused: "no single request in flight answers roots/list"), and
// one caller's calls waiting for input share one process and leave the
// other to other callers, whose elicitations still reach the right caller,
// also after one of the first caller's calls was refused and cancelled.
func TestEverythingStdio(t *testing.T) {
	up := everythingStdio(t, "every")
	up.MaxProcesses = 2 // A's calls wait on one, B's run on the other
	up.MaxCallsPerCaller = 1
	up.MaxParkedPerCaller = 2
	up.Roots = []gateway.Root{{URI: "file:///srv/weft-gw-root", Name: "gw-root"}}
	in := startGatewayAdmitting(t, &gateway.Config{Upstreams: []gateway.UpstreamConfig{up}}, testKeyring(t), nil, tokenAdmission)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	b := client.New(client.NewHTTPTransport(in.url, &client.HTTPOptions{BearerToken: "bob"}), &client.Options{Handlers: client.Handlers{
		Roots: func(context.Context) (exactjson.Value, error) {
			return mustJSON(`{"roots":[{"uri":"file:///from-client"}]}`), nil
		},
		Elicit: func(context.Context, exactjson.Value) (exactjson.Value, error) {
			return mustJSON(`{"action":"accept","content":{"name":"bob-answer"}}`), nil
		},
	}})

	defer b.Close()
	waitTool(t, ctx, b, "get-roots-list")
	t.Run("roots", func(t *testing.T) {
		res, err := b.CallTool(ctx, "get-roots-list", nil)
		if err != nil || !strings.Contains(res.Text(), "file:///srv/weft-gw-root") || strings.Contains(res.Text(), "from-client") {
			t.Fatalf("get-roots-list: %v %v, want the configured root", res, err)
		}
	})
	t.Run("parked calls share the process", func(t *testing.T) {
		a := callerClient(t, in, "alice")
		var first exactjson.Value
		for i := range 2 {
			res, err := callTool(ctx, a, "trigger-elicitation-request", exactjson.Object())
			if err != nil || str(res, "resultType") != "input_required" {
				t.Fatalf("A's call %d: %v %v, want input_required", i, res, err)
			}
			if i == 0 {
				first = res
			}
		}
		// A's third call is refused while it asks (maxParkedPerCaller) and
		// cancelled: its process, where A's two calls wait, is tainted and
		// takes no other caller's call.
		if _, err := callTool(ctx, a, "trigger-elicitation-request", exactjson.Object()); err == nil || !strings.Contains(err.Error(), "maxParkedPerCaller") {
			t.Fatalf("A's third call: %v, want it refused past maxParkedPerCaller", err)
		}
		res, err := b.CallTool(ctx, "echo", map[string]any{"message": "hi from bob"})
		if err != nil || !strings.Contains(res.Text(), "hi from bob") {
			t.Fatalf("B's echo: %v %v", res, err)
		}
		res, err = b.CallTool(ctx, "trigger-elicitation-request", nil)
		if err != nil || !strings.Contains(res.Text(), "bob-answer") {
			t.Fatalf("B's elicitation: %v %v, want B's answer", res, err)
		}
		reqs, _ := first.Get("inputRequests")
		state, _ := first.Get("requestState")
		var answers []exactjson.Member
		for _, m := range reqs.Members() {
			answers = append(answers, exactjson.Field(m.Name, mustJSON(`{"action":"accept","content":{"name":"alice-answer"}}`)))
		}
		got, err := a.Call(ctx, "tools/call", exactjson.Object(
			exactjson.Field("name", exactjson.String("trigger-elicitation-request")), exactjson.Field("arguments", exactjson.Object()),
			exactjson.Field("inputResponses", exactjson.Object(answers...)), exactjson.Field("requestState", state)))
		if err != nil || !strings.Contains(got.String(), "alice-answer") || strings.Contains(got.String(), "bob") {
			t.Fatalf("A's first call, retried: %v %v, want A's answer", got, err)
		}
	})
}

// mustJSON parses s.
func mustJSON(s string) exactjson.Value {
	v, err := exactjson.Parse([]byte(s), exactjson.Limits{})
	if err != nil {
		panic(err)
	}
	return v
}

// startBareGateway runs a gateway whose server has no URL policy of its
// own (as weft gateway's): what its upstreams' URL elicitations may carry
// is the gateway's configuration only.
func startBareGateway(t *testing.T, cfg *gateway.Config, opts gateway.Options) *instance {
	t.Helper()
	srv, err := weft.NewServer(weft.Implementation{Name: "gateway-test", Version: "1"}, &weft.Options{Protector: testKeyring(t),
		Legacy: weft.LegacyOptions{InMemorySessions: true}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	gw, err := gateway.New(ctx, srv, cfg, &opts)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(func() {
		hs.Close()
		if err := gw.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return &instance{gw: gw, srv: srv, url: hs.URL}
}

// URL elicitation of server-everything (issue 27 item 1) completes through
// the gateway under the upstream's urlElicitation policy, by both of its
// paths: elicitation/create in url mode, and the -32042 error (whose retry
// makes it ask by the first path). An origin the policy does not allow
// never reaches the client: the upstream's request is refused and the
// client reads the setting to change. (Before: -32603 Internal error, the
// gateway's config having no policy.)
func TestEverythingURLElicitation(t *testing.T) {
	up := everythingStdio(t, "every")
	up.URLElicitation = &gateway.URLElicitationConfig{AllowedOrigins: []string{"https://example.com", "https://modelcontextprotocol.io"}}
	in := startBareGateway(t, &gateway.Config{Upstreams: []gateway.UpstreamConfig{up}}, gateway.Options{URLElicitation: &elicit.URLPolicy{}})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var mu sync.Mutex
	var opened []string
	c := client.New(client.NewHTTPTransport(in.url, nil), &client.Options{Handlers: client.Handlers{
		Elicit: func(_ context.Context, p exactjson.Value) (exactjson.Value, error) {
			mu.Lock()
			opened = append(opened, str(p, "url"))
			mu.Unlock()
			return mustJSON(`{"action":"accept"}`), nil
		},
	}})

	defer c.Close()
	waitTool(t, ctx, c, "trigger-url-elicitation")
	for _, tc := range []struct {
		name      string
		errorPath bool
		url       string
		want      []string // the URLs the client is asked to open
	}{
		{"request path", false, "https://example.com/connect/1", []string{"https://example.com/connect/1"}},
		{"error path", true, "https://example.com/connect/2", []string{"https://modelcontextprotocol.io", "https://example.com/connect/2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mu.Lock()
			opened = nil
			mu.Unlock()
			res, err := c.CallTool(ctx, "trigger-url-elicitation", map[string]any{"url": tc.url, "errorPath": tc.errorPath})
			if err != nil || !strings.Contains(res.Text(), "User completed the URL elicitation flow") {
				t.Fatalf("%v %v, want the flow completed", res, err)
			}
			mu.Lock()
			defer mu.Unlock()
			if !slices.Equal(opened, tc.want) {
				t.Errorf("the client was asked to open %q, want %q", opened, tc.want)
			}
		})
	}
	t.Run("origin not allowed", func(t *testing.T) {
		mu.Lock()
		opened = nil
		mu.Unlock()
		res, err := c.CallTool(ctx, "trigger-url-elicitation", map[string]any{"url": "https://elsewhere.example/x"})
		got := fmt.Sprint(res, err)
		if res != nil && res.Text() != "" {
			got = res.Text()
		}
		if !strings.Contains(got, "urlElicitation.allowedOrigins") {
			t.Errorf("got %s, want the upstream's refusal naming urlElicitation.allowedOrigins", got)
		}
		if len(opened) > 0 {
			t.Errorf("the client was asked to open %q", opened)
		}
	})
}

// everythingHTTP starts server-everything's Streamable HTTP mode on port
// (it listens on every interface and has no host setting: the test sends
// traffic to 127.0.0.1 only) and returns a function stopping it.
func everythingHTTP(t *testing.T, port int) (stop func()) {
	t.Helper()
	node, entry := npmServer(t, "@modelcontextprotocol/server-everything", "dist/index.js")
	cmd := exec.Command(node, entry, "streamableHttp")
	cmd.Env = append(os.Environ(), "PORT="+strconv.Itoa(port))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	stop = func() {
		once.Do(func() {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		})
	}
	t.Cleanup(stop)
	waitFor(t, "server-everything to listen on 127.0.0.1:"+strconv.Itoa(port), func() bool {
		c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	return stop
}

// freePort returns a port free on 127.0.0.1 and on every interface.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", ":0") // the server binds every interface
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// A restarted server-everything over HTTP is used again (issue 27 item 2):
// it answers the old session with HTTP 400 "Bad Request: No valid session
// ID provided", which the gateway takes for a lost session, opening another
// (before, every later call failed with -31050 until the gateway
// restarted).
func TestEverythingHTTPRestarted(t *testing.T) {
	port := freePort(t)
	stop := everythingHTTP(t, port)
	up := gateway.UpstreamConfig{Name: "every", URL: "http://127.0.0.1:" + strconv.Itoa(port) + "/mcp"}
	in := startGateway(t, &gateway.Config{Upstreams: []gateway.UpstreamConfig{up}}, testKeyring(t), nil)
	c := client.New(client.NewHTTPTransport(in.url, nil), nil)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if res, err := c.CallTool(ctx, "echo", map[string]any{"message": "before"}); err != nil || !strings.Contains(res.Text(), "before") {
		t.Fatalf("before the restart: %v %v", res, err)
	}
	stop()
	everythingHTTP(t, port)
	if res, err := c.CallTool(ctx, "echo", map[string]any{"message": "after"}); err != nil || !strings.Contains(res.Text(), "after") {
		t.Fatalf("after the restart: %v %v", res, err)
	}
}

// A tool of a 2025-era upstream that requires task augmentation
// (server-everything's simulate-research-query, execution.taskSupport
// "required") is listed and runs as a task of the tasks extension (issue 27
// item 3): the gateway creates the upstream's task, polls it, relays the
// elicitation the upstream sends for it through tasks/result as the task's
// input request, and returns its result. A client without the extension is
// told it is required (-32021). Over stdio and over Streamable HTTP.
func TestEverythingTaskRequiredTool(t *testing.T) {
	for name, up := range map[string]func(t *testing.T) gateway.UpstreamConfig{
		"stdio": func(t *testing.T) gateway.UpstreamConfig { return everythingStdio(t, "every") },
		"http": func(t *testing.T) gateway.UpstreamConfig {
			port := freePort(t)
			everythingHTTP(t, port)
			return gateway.UpstreamConfig{Name: "every", URL: "http://127.0.0.1:" + strconv.Itoa(port) + "/mcp"}
		},
	} {
		t.Run(name, func(t *testing.T) { everythingTask(t, up(t)) })
	}
}

func everythingTask(t *testing.T, up gateway.UpstreamConfig) {
	in := startGateway(t, &gateway.Config{Upstreams: []gateway.UpstreamConfig{up}}, testKeyring(t), nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var asked []exactjson.Value
	c := client.New(client.NewHTTPTransport(in.url, nil), &client.Options{TasksEnabled: true, Handlers: client.Handlers{
		Elicit: func(_ context.Context, p exactjson.Value) (exactjson.Value, error) {
			asked = append(asked, p)
			return exactjson.Object(exactjson.Field("action", exactjson.String("accept")),
				exactjson.Field("content", exactjson.Object(exactjson.Field("interpretation", exactjson.String("snake"))))), nil
		}}})

	defer c.Close()
	waitTool(t, ctx, c, "simulate-research-query")

	res, err := c.CallTool(ctx, "simulate-research-query", map[string]any{"topic": "python", "ambiguous": true})
	if err != nil {
		t.Fatal(err)
	}
	if res.TaskID == "" || !strings.Contains(res.Text(), "# Research Report: python (snake)") {
		t.Fatalf("result (task %q): %s", res.TaskID, res.Text())
	}
	if len(asked) != 1 || !strings.Contains(str(asked[0], "message"), "multiple interpretations") ||
		strings.Contains(asked[0].String(), "related-task") {
		t.Errorf("the client was asked %v", asked)
	}

	// Step by step: working, then input_required with the elicitation,
	// answered by tasks/update, then completed.
	created, err := c.Call(ctx, "tools/call", exactjson.Object(exactjson.Field("name", exactjson.String("simulate-research-query")),
		exactjson.Field("arguments", exactjson.Object(exactjson.Field("topic", exactjson.String("rust")), exactjson.Field("ambiguous", exactjson.Bool(true))))))
	if err != nil {
		t.Fatal(err)
	}
	id := str(created, "taskId")
	if str(created, "resultType") != "task" || str(created, "status") != "working" {
		t.Fatalf("tools/call answered %s", created)
	}
	var tk *client.Task
	waitFor(t, "input_required", func() bool {
		tk, err = c.GetTask(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return tk.Status != client.TaskWorking
	})
	if tk.Status != client.TaskInputRequired || tk.InputRequests.Len() != 1 {
		t.Fatalf("task: %s", tk.Raw)
	}
	var key string
	for k, r := range tk.InputRequests.All() {
		key = k
		if str(r, "method") != "elicitation/create" {
			t.Fatalf("input request %s", r)
		}
	}
	if err := c.UpdateTask(ctx, id, exactjson.Object(exactjson.Field(key, exactjson.Object(exactjson.Field("action", exactjson.String("decline")))))); err != nil {
		t.Fatal(err)
	}
	out, err := c.FollowTask(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "rust (User declined - using default interpretation)") {
		t.Fatalf("result %s", out)
	}

	plain := client.New(client.NewHTTPTransport(in.url, nil), nil)
	defer plain.Close()
	_, err = plain.CallTool(ctx, "simulate-research-query", map[string]any{"topic": "x"})
	var re *client.RPCError
	if !errors.As(err, &re) || re.Code != client.CodeMissingRequiredClientCapability {
		t.Fatalf("without the tasks extension: %v", err)
	}
}

// server-filesystem, server-memory and server-sequential-thinking behind
// the gateway over stdio:
// server-filesystem asks roots/list right after initialize and replaces its
// allowed directories with them, so the configured roots reach it (before,
// the request was refused and it kept its command-line directory); a file
// of the root is read through the gateway; server-memory keeps a graph
// across calls; sequential-thinking counts a thought.
func TestFilesystemAndMemory(t *testing.T) {
	node, fsEntry := npmServer(t, "@modelcontextprotocol/server-filesystem", "dist/index.js")
	_, memEntry := npmServer(t, "@modelcontextprotocol/server-memory", "dist/index.js")
	_, thinkEntry := npmServer(t, "@modelcontextprotocol/server-sequential-thinking", "dist/index.js")
	start, root := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "note.txt"), []byte("hello from the root"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := &gateway.Config{Upstreams: []gateway.UpstreamConfig{
		{Name: "files", Command: node, Args: []string{fsEntry, start}, Prefix: "fs_", Roots: []gateway.Root{{URI: "file://" + root, Name: "root"}}},
		{Name: "memory", Command: node, Args: []string{memEntry}, Prefix: "mem_", Env: map[string]string{"MEMORY_FILE_PATH": filepath.Join(t.TempDir(), "memory.jsonl")}},
		{Name: "think", Command: node, Args: []string{thinkEntry}, Prefix: "think_", Env: map[string]string{"DISABLE_THOUGHT_LOGGING": "true"}},
	}}
	in := startGateway(t, cfg, testKeyring(t), nil)
	c := client.New(client.NewHTTPTransport(in.url, nil), nil)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	waitFor(t, "server-filesystem to take the configured root", func() bool {
		res, err := c.CallTool(ctx, "fs_list_allowed_directories", nil)
		return err == nil && strings.Contains(res.Text(), root) && !strings.Contains(res.Text(), start)
	})
	res, err := c.CallTool(ctx, "fs_read_text_file", map[string]any{"path": filepath.Join(root, "note.txt")})
	if err != nil || !strings.Contains(res.Text(), "hello from the root") {
		t.Fatalf("read_text_file: %v %v", res, err)
	}
	if res, err := c.CallTool(ctx, "mem_create_entities", map[string]any{"entities": []map[string]any{
		{"name": "weft", "entityType": "project", "observations": []string{"fronted by a gateway"}}}}); err != nil || res.IsError {
		t.Fatalf("create_entities: %v %v", res, err)
	}
	res, err = c.CallTool(ctx, "mem_read_graph", nil)
	if err != nil || !strings.Contains(res.Text(), "fronted by a gateway") {
		t.Fatalf("read_graph: %v %v", res, err)
	}
	res, err = c.CallTool(ctx, "think_sequentialthinking", map[string]any{"thought": "one", "nextThoughtNeeded": false, "thoughtNumber": 1, "totalThoughts": 1})
	if err != nil || !strings.Contains(res.Text(), `"thoughtHistoryLength": 1`) {
		t.Fatalf("sequentialthinking: %v %v", res, err)
	}
}

// server-postgres and mcp-remote behind the gateway over stdio, two more of
// the most used npm servers: server-postgres answers a read-only query on
// a table of the test database; mcp-remote (the stdio bridge desktop
// clients use to reach remote servers) carries a call to a Weft server
// over Streamable HTTP, so the call crosses gateway, bridge and server.
func TestPostgresAndRemote(t *testing.T) {
	node, pgEntry := npmServer(t, "@modelcontextprotocol/server-postgres", "dist/index.js")
	_, remoteEntry := npmServer(t, "mcp-remote", "dist/proxy.js")

	db := testpg.Open(t)
	table := testpg.Name("gw_npm")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if _, err := db.ExecContext(ctx, "CREATE TABLE "+table+" (note text); INSERT INTO "+table+" VALUES ('kept in postgres')"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = db.Exec("DROP TABLE IF EXISTS " + table) })

	remote, err := weft.NewServer(weft.Implementation{Name: "remote", Version: "1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := weft.AddTool(remote, weft.Tool{Name: "greet", Description: "Greets someone."},
		func(ctx context.Context, req *weft.Request, in struct {
			Name string `json:"name"`
		}) (*weft.CallToolResult, error) {
			return weft.TextResult("Hello, " + in.Name + ", from the remote server"), nil
		}); err != nil {
		t.Fatal(err)
	}
	rs := httptest.NewServer(remote)
	defer rs.Close()

	cfg := &gateway.Config{Upstreams: []gateway.UpstreamConfig{
		{Name: "pg", Command: node, Args: []string{pgEntry, testpg.DSN()}, Prefix: "pg_"},
		{Name: "remote", Command: node, Args: []string{remoteEntry, rs.URL, "--transport", "http-only", "--allow-http"}, Prefix: "remote_",
			Env: map[string]string{"MCP_REMOTE_CONFIG_DIR": t.TempDir()}},
	}}
	in := startGateway(t, cfg, testKeyring(t), nil)
	c := client.New(client.NewHTTPTransport(in.url, nil), nil)
	defer c.Close()

	res, err := c.CallTool(ctx, "pg_query", map[string]any{"sql": "SELECT note FROM " + table})
	if err != nil || res.IsError || !strings.Contains(res.Text(), "kept in postgres") {
		t.Fatalf("server-postgres query: %+v %v", res, err)
	}
	res, err = c.CallTool(ctx, "remote_greet", map[string]any{"name": "Ada"})
	if err != nil || res.IsError || !strings.Contains(res.Text(), "Hello, Ada, from the remote server") {
		t.Fatalf("mcp-remote greet: %+v %v", res, err)
	}
}
