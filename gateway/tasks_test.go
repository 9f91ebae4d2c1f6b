package gateway_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/weftmcp/weft"
	"github.com/weftmcp/weft/client"
	"github.com/weftmcp/weft/exactjson"
	"github.com/weftmcp/weft/gateway"
	"github.com/weftmcp/weft/task"
)

// tasksEnv makes this test binary a 2026-07-28 stdio server with tasks
// (tasksServer).
const tasksEnv = "WEFT_GATEWAY_TASKS"

// tasksServer is a Weft server with the tasks extension: "confirm" runs as
// a task that asks for a name through the task (input_required), "wait"
// runs until it is cancelled, "linked" links a resource from its task's
// result, "inline" answers without a task.
func tasksServer(t testing.TB) *weft.Server {
	s, err := weft.NewServer(weft.Implementation{Name: "tasks", Version: "1"}, &weft.Options{Tasks: &weft.TaskOptions{Store: task.NewMemoryStore(nil), PollInterval: 10 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	fail := func(err error) {
		if err != nil {
			if t != nil {
				t.Fatal(err)
			}
			panic(err)
		}
	}
	form := weft.Form(weft.ConditionalCapability)
	schema := exactjson.Object(exactjson.Field("type", exactjson.String("object")),
		exactjson.Field("properties", exactjson.Object(exactjson.Field("name", exactjson.Object(exactjson.Field("type", exactjson.String("string")))))))
	fail(s.AddTool(weft.Tool{Name: "confirm", Description: "Asks for a name in the task, then confirms.", Task: weft.TaskRequired, Inputs: []weft.Input{form}},
		func(ctx context.Context, req *weft.Request) (*weft.CallToolResult, error) {
			if req.Task() == nil {
				return nil, weft.RunAsTask(nil)
			}
			content, outcome, ok, err := form.Answer(req, "who")
			if !ok {
				return nil, weft.AskInput("who", form.Ask("Who confirms?", schema))
			}
			if err != nil || outcome != weft.Accepted {
				return &weft.CallToolResult{Content: []weft.Content{weft.TextContent("declined")}}, nil
			}
			n, _ := content.Get("name")
			name, _ := n.AsString()
			return &weft.CallToolResult{Content: []weft.Content{weft.TextContent("confirmed by " + name)}}, nil
		}))
	fail(s.AddTool(weft.Tool{Name: "wait", Description: "Runs as a task until cancelled.", Task: weft.TaskRequired},
		func(ctx context.Context, req *weft.Request) (*weft.CallToolResult, error) {
			if req.Task() == nil {
				return nil, weft.RunAsTask(nil)
			}
			<-ctx.Done()
			return nil, ctx.Err()
		}))
	fail(s.AddTool(weft.Tool{Name: "linked", Description: "Runs as a task and links its output.", Task: weft.TaskRequired},
		func(ctx context.Context, req *weft.Request) (*weft.CallToolResult, error) {
			if req.Task() == nil {
				return nil, weft.RunAsTask(nil)
			}
			return &weft.CallToolResult{Content: []weft.Content{weft.ResourceLinkContent(weft.ResourceInfo{URI: "jobs://out/1", Name: "out"})}}, nil
		}))
	link := weft.URL(weft.ConditionalCapability)
	fail(s.AddTool(weft.Tool{Name: "golink", Description: "Sends the user to another origin in the task.", Task: weft.TaskRequired, Inputs: []weft.Input{link}},
		func(ctx context.Context, req *weft.Request) (*weft.CallToolResult, error) {
			if req.Task() == nil {
				return nil, weft.RunAsTask(nil)
			}
			outcome, ok, _ := link.Answer(req, "go")
			if !ok {
				return nil, weft.AskInput("go", link.Ask("Open this.", "https://elsewhere.example/x"))
			}
			text := "link accept"
			if outcome == weft.Declined {
				text = "link decline"
			}
			return &weft.CallToolResult{Content: []weft.Content{weft.TextContent(text)}}, nil
		}))
	fail(s.AddTool(weft.Tool{Name: "inline", Description: "Answers in line."},
		func(ctx context.Context, req *weft.Request) (*weft.CallToolResult, error) {
			return &weft.CallToolResult{Content: []weft.Content{weft.TextContent("inline")}}, nil
		}))
	return s
}

// runTasksStdio serves tasksServer on stdin and stdout.
func runTasksStdio() int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	if err := tasksServer(nil).ServeStdio(ctx, os.Stdin, os.Stdout); err != nil && ctx.Err() == nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// tokenAdmission admits "Bearer NAME" as principal NAME.
func tokenAdmission(_ context.Context, r *weft.AdmissionRequest) (weft.Identity, error) {
	return weft.Identity{Principal: r.BearerToken, Partition: r.BearerToken}, nil
}

// The tasks of a 2026-07-28 upstream reach the gateway's clients: a
// tools/call answered with a task gives a gateway task id, through which
// tasks/get, tasks/update (the task's own input requests) and tasks/cancel
// reach the upstream's task, over HTTP (from a second gateway instance
// too), stdio and a mount. The id is the caller's only.
func TestTasksRelayed(t *testing.T) {
	kr := testKeyring(t)
	type setup struct {
		urls []string // gateway instances fronting one upstream task store
	}
	setups := map[string]func(t *testing.T) setup{
		"http": func(t *testing.T) setup {
			hs := httptest.NewServer(tasksServer(t))
			t.Cleanup(hs.Close)
			cfg := &gateway.Config{Upstreams: []gateway.UpstreamConfig{{Name: "jobs", URL: hs.URL, Prefix: "jobs."}}}
			a := startGatewayAdmitting(t, cfg, kr, nil, tokenAdmission)
			b := startGatewayAdmitting(t, cfg, kr, nil, tokenAdmission)
			return setup{urls: []string{a.url, b.url}}
		},
		"stdio": func(t *testing.T) setup {
			cfg := &gateway.Config{Upstreams: []gateway.UpstreamConfig{{Name: "jobs", Command: os.Args[0], Prefix: "jobs.",
				Env: map[string]string{tasksEnv: "1"}}}}
			return setup{urls: []string{startGatewayAdmitting(t, cfg, kr, nil, tokenAdmission).url}}
		},
		"mount": func(t *testing.T) setup {
			parent, err := weft.NewServer(weft.Implementation{Name: "parent", Version: "1"}, &weft.Options{Protector: kr, Admission: tokenAdmission})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			gw, err := gateway.Mount(ctx, parent, "jobs", "jobs.", tasksServer(t), nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { gw.Close() })
			return setup{urls: []string{serveHTTP(t, parent)}}
		},
	}
	for name, mk := range setups {
		t.Run(name, func(t *testing.T) {
			s := mk(t)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			newClient := func(url, token string) *client.Client {
				c := client.New(client.NewHTTPTransport(url, &client.HTTPOptions{BearerToken: token}), &client.Options{TasksEnabled: true,
					Handlers: client.Handlers{Elicit: nameAnswer("ada")}})

				t.Cleanup(func() { c.Close() })
				return c
			}
			c := newClient(s.urls[0], "alice")
			d, err := c.Discover(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if ext, _ := d.Capabilities.Get("extensions"); !ext.Has(client.TasksExtension) {
				t.Fatalf("the gateway does not advertise the tasks extension: %s", d.Capabilities)
			}

			// CallTool follows the task to its end, answering its input.
			res, err := c.CallTool(ctx, "jobs.confirm", nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := res.Text(); got != "confirmed by ada" {
				t.Fatalf("confirm: %q", got)
			}

			// The resource link of a task's result carries the exposed URI
			// (resource prefix "jobs").
			res, err = c.CallTool(ctx, "jobs.linked", nil)
			if err != nil || res.TaskID == "" || len(res.Content) != 1 || res.Content[0].URI != "jobs://jobs/out/1" {
				t.Fatalf("linked: %+v %v", res, err)
			}

			// Step by step, on the last instance.
			c2 := newClient(s.urls[len(s.urls)-1], "alice")
			created, err := c.Call(ctx, "tools/call", exactjson.Object(exactjson.Field("name", exactjson.String("jobs.confirm"))))
			if err != nil {
				t.Fatal(err)
			}
			id := str(created, "taskId")
			if rt := str(created, "resultType"); rt != "task" || !strings.HasPrefix(id, "relayed.") {
				t.Fatalf("tools/call answered %s", created)
			}
			var tk *client.Task
			waitFor(t, "input_required", func() bool {
				tk, err = c2.GetTask(ctx, id)
				if err != nil {
					t.Fatal(err)
				}
				return tk.Status == client.TaskInputRequired
			})
			if tk.TaskID != id || !tk.InputRequests.Has("who") {
				t.Fatalf("input_required task: %s", tk.Raw)
			}
			if err := c2.UpdateTask(ctx, id, exactjson.Object(exactjson.Field("who", exactjson.Object(
				exactjson.Field("action", exactjson.String("accept")),
				exactjson.Field("content", exactjson.Object(exactjson.Field("name", exactjson.String("bo")))))))); err != nil {
				t.Fatal(err)
			}
			out, err := c2.FollowTask(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(out.String(), "confirmed by bo") {
				t.Fatalf("result %s", out)
			}

			// Another caller does not know the id; a forged one is unknown.
			mallory := newClient(s.urls[0], "mallory")
			for _, bad := range []string{id, id + "x", "relayed.nothing"} {
				_, err := mallory.GetTask(ctx, bad)
				var re *client.RPCError
				if !errors.As(err, &re) || re.Code != client.CodeInvalidParams {
					t.Fatalf("tasks/get %q as another caller: %v", bad, err)
				}
			}

			// Cancellation reaches the upstream.
			created, err = c.Call(ctx, "tools/call", exactjson.Object(exactjson.Field("name", exactjson.String("jobs.wait"))))
			if err != nil {
				t.Fatal(err)
			}
			id = str(created, "taskId")
			if err := c2.CancelTask(ctx, id); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "cancelled", func() bool {
				tk, err = c.GetTask(ctx, id)
				if err != nil {
					t.Fatal(err)
				}
				return tk.Status == client.TaskCancelled
			})

			// A task's URL elicitation to an origin the gateway does not
			// allow is declined upstream, never shown to the client.
			asked := 0
			lc := client.New(client.NewHTTPTransport(s.urls[0], &client.HTTPOptions{BearerToken: "alice"}), &client.Options{TasksEnabled: true,
				Handlers: client.Handlers{Elicit: func(context.Context, exactjson.Value) (exactjson.Value, error) {
					asked++
					return exactjson.Object(exactjson.Field("action", exactjson.String("accept"))), nil
				}}})

			defer lc.Close()
			if res, err := lc.CallTool(ctx, "jobs.golink", nil); err != nil || res.Text() != "link decline" || asked != 0 {
				t.Fatalf("golink: %v %v (client asked %d times)", res, err, asked)
			}

			// A tool answering in line still does; a client without the
			// extension is not given tasks (the upstream's -32021).
			if res, err := c.CallTool(ctx, "jobs.inline", nil); err != nil || res.Text() != "inline" {
				t.Fatalf("inline: %v %v", res, err)
			}
			plain := client.New(client.NewHTTPTransport(s.urls[0], &client.HTTPOptions{BearerToken: "alice"}), nil)
			defer plain.Close()
			_, err = plain.CallTool(ctx, "jobs.confirm", nil)
			var re *client.RPCError
			if !errors.As(err, &re) || re.Code != client.CodeMissingRequiredClientCapability {
				t.Fatalf("confirm without the tasks extension: %v", err)
			}
		})
	}
}

func str(v exactjson.Value, name string) string {
	m, _ := v.Get(name)
	s, _ := m.AsString()
	return s
}
