package weft_test

import (
	"context"
	"fmt"
	"log"
	"net/http/httptest"

	"github.com/weftmcp/weft"
	"github.com/weftmcp/weft/client"
	"github.com/weftmcp/weft/exactjson"
)

type deployArgs struct {
	Service string `json:"service"`
}

type deployConfirm struct {
	Confirm bool `json:"confirm" jsonschema:"deploy now"`
}

// A tool that asks the user to confirm with a form, then continues as a
// durable task: the first call answers input_required with the form, the
// client retries with the user's answer, the handler starts a task, and
// the task runner calls the handler again to do the work. Tasks are kept
// in memory here (for development); Options.Tasks.Store takes a SQLite or
// PostgreSQL store.
func Example() {
	s, err := weft.NewServer(weft.Implementation{Name: "deployer", Version: "1.0.0"}, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer s.Shutdown(context.Background())
	confirm := weft.FormOf[deployConfirm](weft.RequiredCapability)
	err = weft.AddTool(s, weft.Tool{Name: "deploy", Description: "Deploys a service once the user confirms.",
		Inputs: []weft.Input{confirm}, Task: weft.TaskRequired},
		func(ctx context.Context, req *weft.Request, in deployArgs) (*weft.CallToolResult, error) {
			if req.Task() != nil { // the durable step, run by the task runner
				return weft.TextResult("deployed " + in.Service), nil
			}
			answer, action, answered, err := confirm.Answer(req, "confirm")
			switch {
			case err != nil:
				return nil, err
			case !answered:
				return nil, weft.AskInput("confirm", confirm.Ask("Deploy "+in.Service+"?"))
			case action != weft.Accepted || !answer.Confirm:
				return weft.TextResult("not deployed"), nil
			}
			return nil, weft.RunAsTask(nil)
		})
	if err != nil {
		log.Fatal(err)
	}
	ts := httptest.NewServer(s)
	defer ts.Close()

	// A client that answers the form itself (a real one shows it to the user)
	// and follows the task to its end.
	c := client.New(client.NewHTTPTransport(ts.URL, nil), &client.Options{
		TasksEnabled: true,
		Handlers: client.Handlers{Elicit: func(ctx context.Context, form exactjson.Value) (exactjson.Value, error) {
			return exactjson.ParseString(`{"action":"accept","content":{"confirm":true}}`, exactjson.Limits{})
		}},
	})

	defer c.Close()
	res, err := c.CallTool(context.Background(), "deploy", deployArgs{Service: "billing"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Text())
	fmt.Println("ran as a task:", res.TaskID != "")
	// Output:
	// deployed billing
	// ran as a task: true
}
