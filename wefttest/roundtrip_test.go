package wefttest_test

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/weftmcp/weft"
	"github.com/weftmcp/weft/client"
	"github.com/weftmcp/weft/exactjson"
	"github.com/weftmcp/weft/wefttest"
)

type shipConfirm struct {
	Ship bool `json:"ship"`
}

// TestRoundTripperWithClient: the client package over RoundTripper, no
// socket: progress streams while the call runs, a durable task's step asks
// with a form and gets its answer through tasks/update, and a programming
// error reaches report while the client gets the sanitized -32603.
func TestRoundTripperWithClient(t *testing.T) {
	srv, err := weft.NewServer(weft.Implementation{Name: "rt", Version: "1"}, &weft.Options{
		Logger: quietLogger(),
		Tasks:  &weft.TaskOptions{PollInterval: 10 * time.Millisecond},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Shutdown(context.Background()) })
	confirm := weft.FormOf[shipConfirm](weft.RequiredCapability)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(weft.AddTool(srv, weft.Tool{Name: "ship", Description: "Ships after the user confirms, as a task.",
		Inputs: []weft.Input{confirm}, Task: weft.TaskRequired},
		func(ctx context.Context, req *weft.Request, _ struct{}) (*weft.CallToolResult, error) {
			if req.Task() == nil {
				return nil, weft.RunAsTask(nil)
			}
			answer, action, answered, err := confirm.Answer(req, "ship")
			switch {
			case err != nil:
				return nil, err
			case !answered:
				return nil, weft.AskInput("ship", confirm.Ask("Ship it?"))
			case action != weft.Accepted || !answer.Ship:
				return weft.TextResult("kept"), nil
			}
			return weft.TextResult("shipped"), nil
		}))
	must(srv.AddTool(weft.Tool{Name: "count", Description: "Reports progress."},
		func(ctx context.Context, req *weft.Request) (*weft.CallToolResult, error) {
			for i := 1; i <= 3; i++ {
				if err := req.Progress(float64(i), 3, "step"); err != nil {
					return nil, err
				}
			}
			return weft.TextResult("counted"), nil
		}))
	must(srv.AddTool(weft.Tool{Name: "bug", Description: "Asks for input it did not declare."},
		func(ctx context.Context, req *weft.Request) (*weft.CallToolResult, error) {
			return nil, weft.AskInput("x", weft.Roots(weft.RequiredCapability).Ask())
		}))

	var mu sync.Mutex
	var reported []error
	hc := &http.Client{Transport: wefttest.RoundTripper(srv, func(err error) {
		mu.Lock()
		reported = append(reported, err)
		mu.Unlock()
	})}
	var progress []float64
	c := client.New(client.NewHTTPTransport("http://"+wefttest.Host+wefttest.DefaultEndpoint, &client.HTTPOptions{Client: hc}), &client.Options{
		TasksEnabled: true,
		OnProgress:   func(p, total float64, msg string) { progress = append(progress, p) },
		Handlers: client.Handlers{Elicit: func(ctx context.Context, form exactjson.Value) (exactjson.Value, error) {
			return exactjson.ParseString(`{"action":"accept","content":{"ship":true}}`, exactjson.Limits{})
		}},
	})

	t.Cleanup(func() { c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	res, err := c.CallTool(ctx, "count", nil)
	if err != nil || res.Text() != "counted" || len(progress) != 3 {
		t.Errorf("count: %v, %v; progress %v, want 3 notifications", res, err, progress)
	}
	res, err = c.CallTool(ctx, "ship", nil)
	if err != nil || res.Text() != "shipped" || res.TaskID == "" {
		t.Errorf("ship: %+v, %v; want the task's answer after the form", res, err)
	}
	_, err = c.CallTool(ctx, "bug", nil)
	var rerr *client.RPCError
	if !errors.As(err, &rerr) || rerr.Code != client.CodeInternalError || rerr.Message != "Internal error" {
		t.Errorf("bug: %v, want the sanitized -32603", err)
	}
	mu.Lock()
	defer mu.Unlock()
	var pe *weft.ProgrammingError
	if len(reported) != 1 || !errors.As(reported[0], &pe) || pe.Name != "bug" {
		t.Errorf("reported %v, want one *weft.ProgrammingError of bug", reported)
	}
}

// TestRoundTripperCancel: cancelling the request's context ends the
// handler's, as a client hanging up does on a real server.
func TestRoundTripperCancel(t *testing.T) {
	srv, err := weft.NewServer(weft.Implementation{Name: "rt", Version: "1"}, &weft.Options{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	ended := make(chan error, 1)
	if err := srv.AddTool(weft.Tool{Name: "wait", Description: "Waits to be cancelled."},
		func(ctx context.Context, req *weft.Request) (*weft.CallToolResult, error) {
			_ = req.Progress(1, 0, "waiting") // commits the stream, so the call is under way
			<-ctx.Done()
			ended <- ctx.Err()
			return nil, ctx.Err()
		}); err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Transport: wefttest.RoundTripper(srv, nil)}
	started := make(chan struct{}, 1)
	c := client.New(client.NewHTTPTransport("http://"+wefttest.Host+wefttest.DefaultEndpoint, &client.HTTPOptions{Client: hc}), &client.Options{
		OnProgress: func(float64, float64, string) { started <- struct{}{} },
	})

	t.Cleanup(func() { c.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { _, err := c.CallTool(ctx, "wait", nil); done <- err }()
	select {
	case <-started:
	case <-time.After(30 * time.Second):
		t.Fatal("the call never started")
	}
	cancel()
	select {
	case err := <-ended:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("handler ended with %v, want context.Canceled", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the handler's context did not end")
	}
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("CallTool = %v, want context.Canceled", err)
	}
}
