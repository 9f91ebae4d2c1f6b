package weft

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/weftmcp/weft/client"
)

// TestTasksDefaultStore: a tool declaring task support on a server without
// Options.Tasks turns tasks on with an in-memory store (logged as a
// development-only warning, once); RunAsTask takes a Go value as state and
// the task's step reads it back with FrameworkState.
func TestTasksDefaultStore(t *testing.T) {
	s, logs := newServer(t, nil)
	type order struct {
		Item  string `json:"item"`
		Count int    `json:"count"`
	}
	for _, name := range []string{"pack", "ship"} {
		must(t, AddTool(s, Tool{Name: name, Description: "Runs as a task.", Task: TaskRequired},
			func(ctx context.Context, req *Request, in order) (*CallToolResult, error) {
				if req.Task() == nil {
					return nil, RunAsTask(in)
				}
				st, ok, err := FrameworkState[order](req)
				if err != nil || !ok {
					return nil, ToolErrorf("no state: %v", err)
				}
				return TextResult(name + " " + strings.Repeat(st.Item+" ", st.Count)), nil
			}))
	}
	if n := logs.count(slog.LevelWarn, "durable tasks are kept in memory"); n != 1 {
		t.Errorf("development warning logged %d times, want once", n)
	}
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := client.New(client.NewHTTPTransport(ts.URL, nil), &client.Options{TasksEnabled: true})
	t.Cleanup(func() { c.Close() })
	res, err := c.CallTool(ctx, "ship", map[string]any{"item": "tea", "count": 2})
	if err != nil {
		t.Fatal(err)
	}
	if res.TaskID == "" || res.Text() != "ship tea tea " {
		t.Errorf("result %q (task %q), want the task's answer %q", res.Text(), res.TaskID, "ship tea tea ")
	}
}

// TestRunAsTaskStateThatDoesNotMarshal: state RunAsTask cannot marshal is
// the application's programming error: the client gets -32603 and no task
// is created.
func TestRunAsTaskStateThatDoesNotMarshal(t *testing.T) {
	s, logs := newServer(t, &Options{Tasks: &TaskOptions{}})
	must(t, s.AddTool(Tool{Name: "job", Description: "Bad state.", Task: TaskOptional},
		func(ctx context.Context, req *Request) (*CallToolResult, error) {
			return nil, RunAsTask(func() {})
		}))
	r := invRec(t, s, invBody(t, "tools/call", paramsCaps(invTasksCaps(), M{"name": "job"})))
	if r.msg.Error == nil || r.msg.Error.Code != CodeInternalError {
		t.Fatalf("want -32603, got %s", r)
	}
	if logs.count(slog.LevelError, "the state given to weft.RunAsTask") != 1 {
		t.Errorf("programming error not logged: %v", logs.records())
	}
}

// TestTaskOptionsRefused: a negative TaskOptions duration or count is an
// error of NewServer naming the field.
func TestTaskOptionsRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    TaskOptions
	}{
		{"Workers", TaskOptions{Workers: -1}},
		{"Lease", TaskOptions{Lease: -time.Second}},
		{"PollInterval", TaskOptions{PollInterval: -time.Millisecond}},
		{"Retention", TaskOptions{Retention: -time.Hour}},
	} {
		if _, err := NewServer(Implementation{}, &Options{Tasks: &tc.o}); err == nil || !strings.Contains(err.Error(), "TaskOptions."+tc.name) {
			t.Errorf("%s: NewServer error %v, want one naming TaskOptions.%s", tc.name, err, tc.name)
		}
	}
}
