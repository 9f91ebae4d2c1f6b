package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/weftmcp/weft/client"
	"github.com/weftmcp/weft/elicit"
	"github.com/weftmcp/weft/exactjson"
)

// TestProtocolCommands runs every protocol command of the CLI against the
// demo, over HTTP and over stdio (--command), in text and --json form, in
// both eras: against the demo serving both (the CLI speaks 2026-07-28),
// the same demo with --protocol 2025-11-25, and a demo serving only the
// 2025 revisions (the CLI falls back on its own). Commands of what only
// 2026-07-28 has (listen, task) say so in the 2025 era.
func TestProtocolCommands(t *testing.T) {
	addr, addr2025 := freeAddr(t), freeAddr(t)
	startServe(t, "--addr", addr, "--data", t.TempDir())
	startServe(t, "--addr", addr2025, "--data", t.TempDir(), "--eras", "2025")
	waitPort(t, addr)
	waitPort(t, addr2025)
	url := "http://" + addr + "/mcp"

	type era struct {
		name      string
		url       string
		serve     []string // the stdio server's serve flags
		flags     []string // the CLI's flags
		discover  []string // in discover's output
		modernErr string   // what listen and task say; "" where the era has them
	}
	eras := []era{
		{name: "2026", url: url, discover: []string{"versions      2026-07-28", "io.modelcontextprotocol/tasks"}},
		{name: "2025-pinned", url: url, flags: []string{"--protocol", "2025-11-25"}, discover: []string{"versions      2025-11-25"},
			modernErr: "MCP 2025-11-25 has no %s: it needs 2026-07-28"},
		{name: "2025-only", url: "http://" + addr2025 + "/mcp", serve: []string{"--eras", "2025"}, discover: []string{"versions      2025-11-25"},
			modernErr: "speaks MCP 2025-11-25, which has no %s"},
	}
	for _, e := range eras {
		cases := []struct {
			name  string
			args  []string // after the target
			stdin string   // answers at the terminal
			want  []string // in the text output
		}{
			{"discover", []string{"discover"}, "", append([]string{"server        weft-demo 0.1.0"}, e.discover...)},
			{"tools", []string{"tools"}, "", []string{"catalog.continue", "refund.request"}},
			{"prompts", []string{"prompts"}, "", []string{"summarize", "arguments: text*, tone"}},
			{"resources", []string{"resources"}, "", []string{"weft://demo/readme", "text/markdown"}},
			{"templates", []string{"templates"}, "", []string{"weft://demo/orders/{id}"}},
			{"prompt", []string{"prompt", "summarize", "--arg", "text=the tide", "--arg", "tone=formal"}, "", []string{"[user]", "in a formal tone", "the tide"}},
			{"read", []string{"read", "weft://demo/readme"}, "", []string{"# Weft demo"}},
			{"read-template", []string{"read", "weft://demo/orders/A-9"}, "", []string{`"id":"A-9"`}},
			{"complete-prompt", []string{"complete", "--prompt", "summarize", "tone", "f"}, "", []string{"formal\nfriendly\n"}},
			{"complete-none", []string{"complete", "--prompt", "summarize", "tone", "zzz"}, "", []string{"No completions."}},
			{"call", []string{"call", "refund.request", "--args", `{"orderId":"A-1"}`}, "a\n3.50\n", []string{"Refund of 3.50 for order A-1 requested."}},
		}
		transports := []struct {
			name   string
			target func(cmd string, rest []string) []string
		}{
			{"http", func(cmd string, rest []string) []string {
				return append(append([]string{cmd, e.url}, e.flags...), rest...)
			}},
			{"stdio", func(cmd string, rest []string) []string {
				stdio := []string{"--command", weftBin + " serve --stdio --data " + t.TempDir() + " " + strings.Join(e.serve, " ")}
				return append(append(append([]string{cmd}, stdio...), e.flags...), rest...)
			}},
		}
		for _, transport := range transports {
			for _, tc := range cases {
				t.Run(e.name+"/"+transport.name+"/"+tc.name, func(t *testing.T) {
					args := transport.target(tc.args[0], tc.args[1:])
					out := runWeftInput(t, tc.stdin, args...)
					for _, w := range tc.want {
						if !strings.Contains(out, w) {
							t.Errorf("weft %s: output %q lacks %q", strings.Join(args, " "), out, w)
						}
					}
					if tc.stdin != "" {
						return
					}
					// --json prints one JSON value a script can parse.
					js := runWeftStdout(t, append(args, "--json")...)
					if !json.Valid([]byte(js)) {
						t.Errorf("weft %s --json: not JSON: %q", strings.Join(args, " "), js)
					}
				})
			}
			if e.modernErr == "" {
				continue // TestProtocolTasksAndListen runs them in 2026-07-28
			}
			for _, tc := range []struct {
				args []string
				what string
			}{
				{[]string{"listen", "--count", "1"}, "subscriptions/listen"},
				{[]string{"task", "get", "T1"}, "tasks"},
				{[]string{"task", "follow", "T1"}, "tasks"},
				{[]string{"task", "cancel", "T1"}, "tasks"},
			} {
				t.Run(e.name+"/"+transport.name+"/"+strings.Join(tc.args[:len(tc.args)-1], "-"), func(t *testing.T) {
					var args []string
					if tc.args[0] == "task" {
						args = append([]string{"task"}, transport.target(tc.args[1], tc.args[2:])...)
					} else {
						args = transport.target(tc.args[0], tc.args[1:])
					}
					out, err := exec.Command(weftBin, args...).CombinedOutput()
					if want := fmt.Sprintf(e.modernErr, tc.what); err == nil || !strings.Contains(string(out), want) {
						t.Errorf("weft %s: %v %q, want a failure saying %q", strings.Join(args, " "), err, out, want)
					}
				})
			}
		}
	}

	// Errors say what happened in the user's terms, with a non-zero exit.
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"unreachable", []string{"tools", "http://" + freeAddr(t) + "/mcp"}, "nothing listens at"},
		{"wrong-path", []string{"tools", "http://" + addr + "/nope"}, "check the path (often /mcp)"},
		{"not-a-url", []string{"tools", "127.0.0.1:8080"}, "is not a server URL"},
		{"no-target", []string{"tools"}, "the server's URL is missing"},
		{"unknown-tool", []string{"call", url, "no.such.tool"}, "the server refused the request: Unknown tool"},
		{"unknown-prompt", []string{"prompt", url, "nope"}, "the server refused the request"},
		{"bad-arg", []string{"prompt", url, "summarize", "--arg", "novalue"}, "an argument is NAME=VALUE"},
		{"complete-both", []string{"complete", url, "--prompt", "p", "--resource", "r", "a", "v"}, "exactly one of --prompt and --resource"},
		{"bad-command", []string{"tools", "--command", "/nonexistent/server"}, "could not start"},
		{"header-with-command", []string{"tools", "--command", "x", "--header", "A: b"}, "apply to HTTP servers"},
		{"unclosed-quote", []string{"tools", "--command", "x 'y"}, "unclosed ' quote"},
		{"task-verb", []string{"task", "frob", url, "id"}, `unknown task command "frob"`},
		{"bad-protocol", []string{"tools", url, "--protocol", "2024-11-05"}, "--protocol is 2026-07-28, 2025-11-25 or 2025-06-18"},
		{"bad-eras", []string{"serve", "--eras", "2024", "--data", t.TempDir()}, "--eras is both, 2026 or 2025"},
	} {
		t.Run("error/"+tc.name, func(t *testing.T) {
			out, err := exec.Command(weftBin, tc.args...).CombinedOutput()
			if err == nil {
				t.Fatalf("weft %s succeeded: %s", strings.Join(tc.args, " "), out)
			}
			if !strings.Contains(string(out), tc.want) {
				t.Errorf("weft %s: %q lacks %q", strings.Join(tc.args, " "), out, tc.want)
			}
		})
	}
}

// TestProtocolTasksAndListen creates a durable task on the demo, then
// watches it with weft listen, shows it with weft task get, answers its
// question with weft task follow, and cancels another with weft task
// cancel.
func TestProtocolTasksAndListen(t *testing.T) {
	addr := freeAddr(t)
	startServe(t, "--addr", addr, "--data", t.TempDir())
	waitPort(t, addr)
	url := "http://" + addr + "/mcp"
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// A client that declares the tasks extension and does not follow, so
	// that the task is left for the CLI.
	start := func() string {
		c := client.New(client.NewHTTPTransport(url, nil), &client.Options{TasksEnabled: true,
			Capabilities: exactjson.Object(exactjson.Field("elicitation", exactjson.Object()),
				exactjson.Field("extensions", exactjson.Object(exactjson.Field(client.TasksExtension, exactjson.Object()))))})

		defer c.Close()
		res, err := c.Call(ctx, "tools/call", exactjson.Object(exactjson.Field("name", exactjson.String("report.generate")),
			exactjson.Field("arguments", exactjson.Object(exactjson.Field("topic", exactjson.String("tides"))))))
		if err != nil {
			t.Fatal(err)
		}
		id, ok := res.Get("taskId")
		if !ok {
			if task, ok := res.Get("task"); ok {
				id, _ = task.Get("taskId")
			}
		}
		s, _ := id.AsString()
		if s == "" {
			t.Fatalf("no task id in %s", res)
		}
		return s
	}

	id := start()
	// weft listen --task prints the task's status changes; the report asks
	// its question after about a second of progress.
	listen := exec.CommandContext(ctx, weftBin, "listen", url, "--task", id, "--json", "--count", "1")
	lout, err := listen.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := listen.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(lout).ReadString('\n')
	if err != nil {
		t.Fatalf("weft listen: %v", err)
	}
	if err := listen.Wait(); err != nil {
		t.Fatalf("weft listen --count 1 did not end cleanly: %v", err)
	}
	if !strings.Contains(line, `"method":"notifications/tasks`) || !strings.Contains(line, id) {
		t.Errorf("weft listen: %q", line)
	}

	// Wait until the task asks, then show it.
	deadline := time.Now().Add(time.Minute)
	for {
		out := runWeft(t, "task", "get", url, id)
		if strings.Contains(out, "status   input_required") {
			if !strings.Contains(out, "weft task follow") {
				t.Errorf("weft task get does not say how to answer: %q", out)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the task never asked: %q", out)
		}
		time.Sleep(200 * time.Millisecond)
	}

	// weft task follow answers the form at the terminal.
	follow := exec.CommandContext(ctx, weftBin, "task", "follow", url, id)
	stdin, _ := follow.StdinPipe()
	stdout, _ := follow.StdoutPipe()
	follow.Stderr = follow.Stdout
	if err := follow.Start(); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(stdout)
	expectPrompt(t, r, "[a]ccept, [d]ecline or [c]ancel?")
	fmt.Fprintln(stdin, "a")
	expectPrompt(t, r, "Charts (yes/no")
	fmt.Fprintln(stdin, "maybe")
	expectPrompt(t, r, "answer yes or no")
	fmt.Fprintln(stdin, "yes")
	rest, _ := io.ReadAll(r)
	if err := follow.Wait(); err != nil {
		t.Fatalf("weft task follow: %v\n%s", err, rest)
	}
	if !strings.Contains(string(rest), "Report on tides with charts.") {
		t.Errorf("weft task follow: %q", rest)
	}

	// weft task cancel ends another task.
	id2 := start()
	if out := runWeft(t, "task", "cancel", url, id2); !strings.Contains(out, "cancel task "+id2) {
		t.Errorf("weft task cancel: %q", out)
	}
	if out := runWeft(t, "task", "get", url, id2, "--json"); !strings.Contains(out, `"status":"cancelled"`) {
		t.Errorf("after cancel: %q", out)
	}
}

// TestFormFieldRetry checks the terminal form: descriptions and defaults
// are shown, and a value the form refuses re-asks only that field.
func TestFormFieldRetry(t *testing.T) {
	schema, err := elicit.BuildSchema(
		elicit.StringField("name").Title("Name").Description("who you are").Required(),
		elicit.IntegerField("age").Title("Age").MinInt(18).Required(),
		elicit.StringField("city").Title("City").DefaultString("Paris"),
	)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	term := newTerminal(strings.NewReader("Ada\n12\n30\n\n"), &out)
	content, err := term.fill(context.Background(), schema)
	if err != nil {
		t.Fatal(err)
	}
	if got := content.String(); got != `{"name":"Ada","age":30,"city":"Paris"}` {
		t.Errorf("content %s", got)
	}
	transcript := out.String()
	for _, want := range []string{"Name: who you are", "City (text, Enter for \"Paris\")", "Age must be at least 18; try again."} {
		if !strings.Contains(transcript, want) {
			t.Errorf("transcript %q lacks %q", transcript, want)
		}
	}
	if n := strings.Count(transcript, "Name (text"); n != 1 {
		t.Errorf("the name was asked %d times, want once (only the bad field is asked again)", n)
	}
}

// runWeftInput runs weft with stdin as its terminal input and returns its
// combined output; it fails the test when weft fails.
func runWeftInput(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	cmd := exec.Command(weftBin, args...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("weft %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// runWeftStdout runs weft and returns its standard output alone (a stdio
// server's log lines go to standard error).
func runWeftStdout(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(weftBin, args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("weft %s: %v\n%s%s", strings.Join(args, " "), err, out, stderr.String())
	}
	return string(out)
}

func TestDashArgs(t *testing.T) {
	fs := newFlags("task get")
	addTarget(fs)
	got := dashArgs(fs, []string{"http://x/mcp", "-mLL5KD", "--json", "--header=A: b", "-h", "--"})
	want := []string{"http://x/mcp", "--", "-mLL5KD", "--json", "--header=A: b", "-h", "--"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("dashArgs = %q, want %q", got, want)
	}
	// The id after the target stays positional through parseFlags.
	pos, err := parseFlags(fs, taskDoc, got[:3], io.Discard)
	if err != nil || strings.Join(pos, " ") != "http://x/mcp -mLL5KD" {
		t.Errorf("parseFlags = %q, %v", pos, err)
	}
}

func TestSplitCommand(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
		err  bool
	}{
		{"node server.js stdio", []string{"node", "server.js", "stdio"}, false},
		{`  python  "my server.py" --flag='a b' `, []string{"python", "my server.py", "--flag=a b"}, false},
		{`x ""`, []string{"x", ""}, false},
		{"", nil, true},
		{`x "y`, nil, true},
	} {
		got, err := splitCommand(tc.in)
		if (err != nil) != tc.err || strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("splitCommand(%q) = %q, %v", tc.in, got, err)
		}
	}
}
