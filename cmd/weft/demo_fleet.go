package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/url"

	"github.com/jackc/pgx/v5"
	_ "github.com/jackc/pgx/v5/stdlib" // the PostgreSQL database/sql driver
	"github.com/weftmcp/weft/handle"
	"github.com/weftmcp/weft/internal/demo"
	"github.com/weftmcp/weft/sessionstore"
	sessionpg "github.com/weftmcp/weft/sessionstore/pgstore"
	"github.com/weftmcp/weft/task/pgstore"
)

// openFleet opens the state a fleet of demo instances shares in
// PostgreSQL (serve --postgres): tasks and their events, 2025-era sessions
// and handles, in schema when it is set.
func openFleet(ctx context.Context, dsn, schema string, logger *slog.Logger) (*demo.Fleet, error) {
	tasks, err := pgstore.Open(ctx, dsn, &pgstore.Options{Schema: schema, Logger: logger})
	if err != nil {
		return nil, fmt.Errorf("open PostgreSQL task store: %w", err)
	}
	sessions, err := sessionpg.Open(ctx, dsn, &sessionpg.Options{Schema: schema, Logger: logger,
		Limits: sessionstore.Limits{EvictWhenFull: true}})

	if err != nil {
		_ = tasks.Close()
		return nil, fmt.Errorf("open PostgreSQL session store: %w", err)
	}
	db, err := openHandleDB(ctx, dsn, schema)
	if err != nil {
		return nil, errors.Join(err, tasks.Close(), sessions.Close())
	}
	return &demo.Fleet{Tasks: tasks, Events: tasks, Sessions: sessions, DB: db, Dialect: handle.Postgres, Close: sessions.Close}, nil
}

// openHandleDB opens the PostgreSQL database of the demo's handles, with
// schema (created when missing) as its search path.
func openHandleDB(ctx context.Context, dsn, schema string) (*sql.DB, error) {
	if schema != "" {
		// pgx sends unknown URL parameters as run-time settings.
		u, err := url.Parse(dsn)
		if err != nil {
			return nil, fmt.Errorf("parse the PostgreSQL URL: %w", err)
		}
		q := u.Query()
		q.Set("search_path", schema)
		u.RawQuery = q.Encode()
		dsn = u.String()
	}
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		return nil, fmt.Errorf("open PostgreSQL: %w", err)
	}
	if schema != "" {
		if _, err := db.ExecContext(ctx, "CREATE SCHEMA IF NOT EXISTS "+pgx.Identifier{schema}.Sanitize()); err != nil {
			_ = db.Close()
			return nil, fmt.Errorf("create schema: %w", err)
		}
	}
	return db, nil
}
