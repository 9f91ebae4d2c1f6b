package weft

import (
	"context"
	"testing"
	"time"

	"github.com/weftmcp/weft/internal/testpg"
	"github.com/weftmcp/weft/sessionstore/pgstore"
)

// TestLegacyFleetPostgres runs the fleet scenario with two instances, each
// with its own PostgreSQL store (pool and listener) on one schema.
func TestLegacyFleetPostgres(t *testing.T) {
	dsn := testpg.Reachable(t)
	schema := testpg.FreshSchema(t, dsn, "weft_legacy_test")
	open := func() *pgstore.Store {
		st, err := pgstore.Open(context.Background(), dsn, &pgstore.Options{Schema: schema, PollInterval: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = st.Close() })
		return st
	}
	testLegacyFleet(t, open(), open())
}
