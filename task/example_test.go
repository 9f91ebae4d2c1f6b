package task_test

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/weftmcp/weft/task"
)

// A task with one input round: the handler asks for a name, the client
// answers through SubmitInput (tasks/update), and the next step completes.
func ExampleRunner() {
	ctx, stop := context.WithCancel(context.Background())
	store := task.NewMemoryStore(nil)
	defer store.Close()

	runner := &task.Runner{
		Store: store,
		Handler: func(ctx context.Context, job *task.Job) (task.Outcome, error) {
			if job.Step() == 1 {
				return task.NeedInput(json.RawMessage(`{"name":{"method":"elicitation/create"}}`), nil), nil
			}
			var in struct{ Name string }
			if err := json.Unmarshal(job.InputResponses(), &in); err != nil {
				return task.Outcome{}, err
			}
			return task.Complete(json.RawMessage(fmt.Sprintf(`{"content":[{"type":"text","text":"Hello, %s!"}]}`, in.Name))), nil
		},
	}
	done := make(chan error)
	go func() { done <- runner.Run(ctx) }()

	changes, _ := store.Subscribe(ctx, task.ChannelChanged) // before Create: miss nothing
	rec, _ := store.Create(ctx, task.NewTask{Operation: "hello_world", TTL: time.Hour})
	for id := range changes {
		r, _ := store.Get(ctx, id)
		if r.ID != rec.ID {
			continue
		}
		if r.Status == task.InputRequired {
			fmt.Println("asked for", string(r.InputRequests))
			_, _ = store.SubmitInput(ctx, id, json.RawMessage(`{"name":"Luca"}`))
		}
		if r.Status.IsTerminal() {
			fmt.Println(r.Status, string(r.Result))
			break
		}
	}
	stop()
	fmt.Println(<-done)
	// Output:
	// asked for {"name":{"method":"elicitation/create"}}
	// completed {"content":[{"type":"text","text":"Hello, Luca!"}]}
	// <nil>
}

// The store-level flow a worker follows, without a Runner.
func ExampleStore() {
	ctx := context.Background()
	var store task.Store = task.NewMemoryStore(nil)
	defer store.Close()

	rec, _ := store.Create(ctx, task.NewTask{ID: "task-1", Operation: "sum", Params: json.RawMessage(`{"a":1}`)})
	batch, _ := store.Claim(ctx, "worker-1", 30*time.Second, 1)
	claimed := batch[0]
	_, _ = store.Finish(ctx, claimed.ID, claimed.Fence,
		task.NeedInput(json.RawMessage(`{"b":{"ask":"b?"}}`), json.RawMessage(`{"a":1}`)))

	changed, _ := store.SubmitInput(ctx, rec.ID, json.RawMessage(`{"b":2,"unknown":3}`))
	again, _ := store.SubmitInput(ctx, rec.ID, json.RawMessage(`{"b":99}`))
	fmt.Println(changed, again)

	batch, _ = store.Claim(ctx, "worker-2", 30*time.Second, 1)
	next := batch[0]
	fmt.Println(next.Step, string(next.State), string(next.InputResponses))
	_, err := store.Finish(ctx, claimed.ID, claimed.Fence, task.Complete(json.RawMessage(`{}`)))
	fmt.Println(err)
	done, _ := store.Finish(ctx, next.ID, next.Fence, task.Complete(json.RawMessage(`{"sum":3}`)))
	fmt.Println(done.Status, string(done.Result))
	// Output:
	// true false
	// 2 {"a":1} {"b":2}
	// task task-1: finish with fence 1: task: lease lost
	// completed {"sum":3}
}

func ExampleNewID() {
	id, err := task.NewID()
	fmt.Println(len(id), err)
	// Output: 43 <nil>
}

// RoundRobin is the order in which a claim visits partitions: the first
// key after the one the previous claim served last, wrapping around.
func ExampleRoundRobin() {
	fmt.Println(task.RoundRobin([]string{"tenant-c", "tenant-a", "tenant-b"}, "tenant-a"))
	// Output: [tenant-b tenant-c tenant-a]
}
