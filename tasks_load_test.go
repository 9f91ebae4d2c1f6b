package weft_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weftmcp/weft"
	"github.com/weftmcp/weft/client"
	"github.com/weftmcp/weft/exactjson"
	"github.com/weftmcp/weft/internal/race"
	"github.com/weftmcp/weft/task/sqlitestore"
)

// TestTasksLoad: 1,000 tasks created concurrently by 50 clients over real
// HTTP, each asking for one input through tasks/update, on the SQLite store.
// Every task reaches completed with its own result; none is lost or
// duplicated. (Under the race detector: 250 tasks by 25 clients.)
func TestTasksLoad(t *testing.T) {
	clients, perClient := 50, 20
	if race.Enabled || testing.Short() {
		clients, perClient = 25, 10
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	store, err := sqlitestore.Open(ctx, filepath.Join(t.TempDir(), "tasks.db"), &sqlitestore.Options{Synchronous: "NORMAL"})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	s, err := weft.NewServer(weft.Implementation{Name: "load"}, &weft.Options{Logger: slog.New(slog.DiscardHandler), MaxConcurrent: 256, MaxQueue: 1024,
		Tasks: &weft.TaskOptions{Store: store, Workers: 8, PollInterval: 50 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	var steps sync.Map // idempotency key -> count of completed runs
	form := weft.Form(weft.ConditionalCapability)
	type args struct {
		N int `json:"n"`
	}
	err = weft.AddTool(s, weft.Tool{Name: "job", Description: "A task with one input round.", Task: weft.TaskRequired, Inputs: []weft.Input{form}},
		func(ctx context.Context, req *weft.Request, in args) (*weft.CallToolResult, error) {
			if req.Task() == nil {
				return nil, weft.RunAsTask(nil)
			}
			resp, ok := req.InputResponses().Get("go")
			if !ok {
				return nil, weft.AskInput("go", form.Ask(fmt.Sprintf("Run job %d?", in.N),
					exactjson.Object(exactjson.Field("type", exactjson.String("object")), exactjson.Field("properties", exactjson.Object()))))
			}
			if a, _ := resp.Get("action"); !exactjson.Equal(a, exactjson.String("accept")) {
				return nil, &weft.ToolError{Message: "declined"}
			}
			c, _ := steps.LoadOrStore(req.Task().IdempotencyKey, new(atomic.Int32))
			c.(*atomic.Int32).Add(1)
			return &weft.CallToolResult{Content: []weft.Content{weft.TextContent(fmt.Sprintf("job %d done", in.N))}}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s)
	defer ts.Close()
	defer s.Shutdown(context.Background())

	accept := func(ctx context.Context, params exactjson.Value) (exactjson.Value, error) {
		return exactjson.Object(exactjson.Field("action", exactjson.String("accept")), exactjson.Field("content", exactjson.Object())), nil
	}
	var (
		mu      sync.Mutex
		taskIDs = map[string]int{}
		wrong   []string
		wg      sync.WaitGroup
	)
	start := time.Now()
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl := client.New(client.NewHTTPTransport(ts.URL, nil), &client.Options{TasksEnabled: true, Handlers: client.Handlers{Elicit: accept}})
			defer cl.Close()
			for i := range perClient {
				n := c*perClient + i
				res, err := cl.CallTool(ctx, "job", map[string]int{"n": n})
				mu.Lock()
				switch {
				case err != nil:
					wrong = append(wrong, fmt.Sprintf("job %d: %v", n, err))
				case res.TaskID == "" || res.Text() != fmt.Sprintf("job %d done", n):
					wrong = append(wrong, fmt.Sprintf("job %d: task %q result %q", n, res.TaskID, res.Text()))
				default:
					taskIDs[res.TaskID]++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	total := clients * perClient
	if len(wrong) > 0 {
		t.Fatalf("%d of %d tasks went wrong, first: %s", len(wrong), total, wrong[0])
	}
	if len(taskIDs) != total {
		t.Fatalf("%d distinct task ids for %d tasks", len(taskIDs), total)
	}
	runs := 0
	steps.Range(func(k, v any) bool {
		runs++
		if n := v.(*atomic.Int32).Load(); n != 1 {
			t.Errorf("step %v completed %d times", k, n)
		}
		return true
	})
	if runs != total {
		t.Fatalf("%d completed final steps for %d tasks", runs, total)
	}
	t.Logf("%d tasks by %d clients (one input round each) in %v: %.0f tasks/s", total, clients, elapsed.Round(time.Millisecond), float64(total)/elapsed.Seconds())
}
