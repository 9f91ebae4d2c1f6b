package testpg

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// machineStart returns the start time of the machine's server at DSN(), or
// "" when it is unreachable.
func machineStart(ctx context.Context) string {
	c, err := pgx.Connect(ctx, DSN())
	if err != nil {
		return ""
	}
	defer c.Close(ctx)
	var s string
	if err := c.QueryRow(ctx, "SELECT pg_postmaster_start_time()::text").Scan(&s); err != nil {
		return ""
	}
	return s
}

// TestCluster: a throwaway cluster serves its own port, survives a
// restart with its data (terminating the connections open at the time),
// leaves the machine's server alone, and is gone after Stop.
func TestCluster(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	before := machineStart(ctx)

	c, err := NewCluster(ctx)
	if err != nil {
		if os.Getenv("CI") == "" && errors.Is(err, ErrNoServerBinaries) {
			t.Skip(err)
		}
		t.Fatal(err)
	}
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = c.Stop(context.Background())
		}
	})
	if c.Port() == 5432 || c.Port() == 0 {
		t.Fatalf("cluster port %d", c.Port())
	}
	conn, err := pgx.Connect(ctx, c.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var start1 string
	if err := conn.QueryRow(ctx, "SELECT pg_postmaster_start_time()::text").Scan(&start1); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "CREATE TABLE kept (v text); INSERT INTO kept VALUES ('before the restart')"); err != nil {
		t.Fatal(err)
	}

	if err := c.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if err := conn.Ping(ctx); err == nil {
		t.Error("a connection opened before the restart still works: the server was not restarted")
	}
	conn2, err := pgx.Connect(ctx, c.DSN())
	if err != nil {
		t.Fatalf("after the restart: %v", err)
	}
	defer conn2.Close(ctx)
	var start2, v string
	if err := conn2.QueryRow(ctx, "SELECT pg_postmaster_start_time()::text, (SELECT v FROM kept)").Scan(&start2, &v); err != nil {
		t.Fatal(err)
	}
	if start2 == start1 || v != "before the restart" {
		t.Errorf("after the restart: start time %s (was %s), kept row %q", start2, start1, v)
	}
	if after := machineStart(ctx); after != before {
		t.Errorf("the machine's server at %s changed start time: %q -> %q", redact(DSN()), before, after)
	}

	dir := c.dir
	if err := c.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	stopped = true
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the cluster directory %s remains after Stop: %v", dir, err)
	}
	if c3, err := pgx.Connect(ctx, c.DSN()); err == nil {
		c3.Close(ctx)
		t.Error("the cluster still accepts connections after Stop")
	}
}
