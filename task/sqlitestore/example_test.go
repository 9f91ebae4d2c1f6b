package sqlitestore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/weftmcp/weft/task"
	"github.com/weftmcp/weft/task/sqlitestore"
)

func ExampleOpen() {
	dir, err := os.MkdirTemp("", "weft-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)

	ctx := context.Background()
	store, err := sqlitestore.Open(ctx, filepath.Join(dir, "tasks.db"), nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer store.Close()

	rec, _ := store.Create(ctx, task.NewTask{Operation: "report", Params: json.RawMessage(`{"month":7}`), TTL: time.Hour})
	batch, _ := store.Claim(ctx, "worker-1", 30*time.Second, 1)
	claimed := batch[0]
	done, _ := store.Finish(ctx, claimed.ID, claimed.Fence, task.Complete(json.RawMessage(`{"rows":42}`)))
	fmt.Println(claimed.ID == rec.ID, done.Status, string(done.Result))
	// Output: true completed {"rows":42}
}
