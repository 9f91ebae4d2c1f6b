//go:build pgstore

// Built with -tags pgstore (the Makefile adds it when task/pgstore exists),
// so that the harness also builds against trees without that package.

package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/weftmcp/weft/task"
	"github.com/weftmcp/weft/task/pgstore"
)

func init() {
	openPG = func(ctx context.Context, dsn string) (task.Store, func(), error) {
		// A fresh schema, so that every run starts from an empty table and
		// benchmark tasks never mix with the tests'.
		schema, err := throwawaySchema("weft_bench_")
		if err != nil {
			return nil, nil, err
		}
		st, err := pgstore.Open(ctx, dsn, &pgstore.Options{Schema: schema, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			return nil, nil, err
		}
		return st, func() {
			_ = st.Close()
			dctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			dropSchema(dctx, dsn, schema)
		}, nil
	}
}
