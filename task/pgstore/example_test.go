package pgstore_test

import (
	"context"
	"encoding/json"
	"log"
	"time"

	"github.com/weftmcp/weft/task"
	"github.com/weftmcp/weft/task/pgstore"
)

// Open a store and run workers on it; every instance started this way on the
// same database shares the tasks and hears the same notifications.
func ExampleOpen() {
	ctx := context.Background()
	store, err := pgstore.Open(ctx, "postgres://app@db.internal:5432/app", &pgstore.Options{Schema: "weft"})
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()

	runner := &task.Runner{
		Store: store,
		Handler: func(ctx context.Context, job *task.Job) (task.Outcome, error) {
			return task.Complete(json.RawMessage(`{"content":[]}`)), nil
		},
		Lease: 30 * time.Second,
	}
	if err := runner.Run(ctx); err != nil {
		log.Print(err)
	}
}
