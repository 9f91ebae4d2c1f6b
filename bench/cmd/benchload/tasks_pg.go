//go:build pgstore

// Built with -tags pgstore (the Makefile adds it when task/pgstore exists),
// so that the harness also builds against trees without that package.

package main

import (
	"context"
	"log/slog"

	"github.com/weftmcp/weft/task"
	"github.com/weftmcp/weft/task/pgstore"
)

func init() {
	openPG = func(ctx context.Context, dsn string) (task.Store, error) {
		// Its own schema, so that benchmark tasks never mix with the tests'.
		return pgstore.Open(ctx, dsn, pgstore.Options{Schema: "weft_bench", Logger: slog.New(slog.DiscardHandler)})
	}
}
