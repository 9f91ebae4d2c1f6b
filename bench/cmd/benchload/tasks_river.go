package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
	"github.com/riverqueue/river/rivertype"
)

// riverVersion is the River release measured (bench/go.mod).
const riverVersion = "v0.51.2"

// riverConfig is one River client configuration measured.
type riverConfig struct {
	name          string
	fetchCooldown time.Duration // 0: River's default (100 ms)
}

// riverConfigs: River as configured by default, and with its fetch
// cooldown (the minimum time between two fetches of new jobs, which bounds
// both its latency and its throughput) at its minimum.
var riverConfigs = []riverConfig{
	{name: "River " + riverVersion + " (riverpgxv5, defaults: FetchCooldown 100 ms)"},
	{name: "River " + riverVersion + " (riverpgxv5, FetchCooldown 1 ms)", fetchCooldown: time.Millisecond},
}

// noopArgs is the River job measured: it does nothing.
type noopArgs struct{}

func (noopArgs) Kind() string { return "noop" }

type noopWorker struct{ river.WorkerDefaults[noopArgs] }

func (noopWorker) Work(context.Context, *river.Job[noopArgs]) error { return nil }

// throwawaySchema returns a fresh schema name with the given prefix.
func throwawaySchema(prefix string) (string, error) {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return prefix + hex.EncodeToString(b[:]), nil
}

// dropSchema drops schema and everything in it, logging a failure.
func dropSchema(ctx context.Context, dsn, schema string) {
	conn, err := pgx.Connect(ctx, dsn)
	if err == nil {
		_, err = conn.Exec(ctx, `DROP SCHEMA IF EXISTS `+pgx.Identifier{schema}.Sanitize()+` CASCADE`)
		_ = conn.Close(ctx)
	}
	if err != nil {
		logf("  could not drop schema %s: %v", schema, err)
	}
}

// riverTasks measures load on River doing a no-op job, in a throwaway
// schema (River's migrations applied by rivermigrate, dropped afterwards)
// of the database at dsn: clients insert jobs with Client.Insert, a job
// counts as done when the client's EventKindJobCompleted subscription
// reports it (River emits it once the completion is stored); a job not seen
// completed for stragglerAge is read with JobGet once per stragglerAge.
func riverTasks(ctx context.Context, dsn string, rc riverConfig, load taskLoad) (taskRow, error) {
	row := taskRow{system: "River", store: rc.name}
	schema, err := throwawaySchema("river_bench_")
	if err != nil {
		return row, err
	}
	pcfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return row, err
	}
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return row, err
	}
	defer pool.Close()
	if _, err := pool.Exec(ctx, `CREATE SCHEMA `+pgx.Identifier{schema}.Sanitize()); err != nil {
		return row, fmt.Errorf("create schema: %w", err)
	}
	defer func() {
		dctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		dropSchema(dctx, dsn, schema)
	}()
	driver := riverpgxv5.New(pool)
	mig, err := rivermigrate.New(driver, &rivermigrate.Config{Schema: schema, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return row, err
	}
	if _, err := mig.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return row, fmt.Errorf("migrate: %w", err)
	}
	ws := river.NewWorkers()
	if err := river.AddWorkerSafely(ws, noopWorker{}); err != nil {
		return row, err
	}
	client, err := river.NewClient(driver, &river.Config{
		Schema:        schema,
		Queues:        map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: load.workers}},
		Workers:       ws,
		FetchCooldown: rc.fetchCooldown,
		Logger:        slog.New(slog.DiscardHandler),
	})
	if err != nil {
		return row, err
	}
	tr := newTracker(load.n)
	completed, stopSub := client.SubscribeConfig(&river.SubscribeConfig{Kinds: []river.EventKind{river.EventKindJobCompleted}, ChanSize: 4*load.n + 1024})
	defer stopSub()
	rctx, stop := context.WithCancel(ctx)
	defer stop()
	if err := client.Start(rctx); err != nil {
		return row, err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = client.Stop(sctx)
	}()
	go func() {
		for {
			select {
			case <-rctx.Done():
				return
			case ev, ok := <-completed:
				if !ok {
					return
				}
				if ev.Job != nil {
					tr.complete(strconv.FormatInt(ev.Job.ID, 10), time.Now())
				}
			}
		}
	}()
	go pollStragglers(rctx, tr, func(id string) {
		n, _ := strconv.ParseInt(id, 10, 64)
		j, err := client.JobGet(rctx, n)
		switch {
		case err != nil:
			if rctx.Err() == nil {
				tr.fail(fmt.Errorf("river: job %d: %w", n, err))
			}
		case j.State == rivertype.JobStateCompleted:
			tr.complete(id, time.Now())
		case j.State == rivertype.JobStateAvailable, j.State == rivertype.JobStateRunning:
		default:
			tr.fail(fmt.Errorf("river: job %d is %s", n, j.State))
		}
	})
	wall, err := drive(ctx, load, tr, func(ctx context.Context) (string, error) {
		res, err := client.Insert(ctx, noopArgs{}, nil)
		if err != nil {
			return "", err
		}
		return strconv.FormatInt(res.Job.ID, 10), nil
	})
	if err != nil {
		return row, err
	}
	row.fill(load, wall, tr)
	return row, nil
}
