// Package pglisten keeps one PostgreSQL connection LISTENing on a channel
// and hands every notification payload to a callback, reconnecting with
// backoff when the connection breaks. Notifications sent while it is
// disconnected are lost: users treat them as hints and poll as well.
package pglisten

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
)

// Backoff bounds between reconnection attempts.
const (
	MinBackoff = 100 * time.Millisecond
	MaxBackoff = 5 * time.Second
)

// Listener is a running listen loop.
type Listener struct {
	stop context.CancelFunc
	done chan struct{}
}

// Start connects and issues LISTEN before returning (so notifications sent
// after Start returns are heard), then delivers payloads to handle on its
// own goroutine until Stop. name labels the log lines ("task", "session").
func Start(ctx context.Context, cfg *pgx.ConnConfig, channel, name string, log *slog.Logger, handle func(payload string)) (*Listener, error) {
	c, err := connect(ctx, cfg, channel)
	if err != nil {
		return nil, err
	}
	lctx, cancel := context.WithCancel(context.Background())
	l := &Listener{stop: cancel, done: make(chan struct{})}
	go l.run(lctx, cfg, channel, name, log, handle, c)
	return l, nil
}

// Stop ends the loop and waits for it.
func (l *Listener) Stop() {
	l.stop()
	<-l.done
}

func connect(ctx context.Context, cfg *pgx.ConnConfig, channel string) (*pgx.Conn, error) {
	c, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("pgstore: connect listener: %w", err)
	}
	if _, err := c.Exec(ctx, "LISTEN "+pgx.Identifier{channel}.Sanitize()); err != nil {
		closeQuietly(c)
		return nil, fmt.Errorf("pgstore: listen: %w", err)
	}
	return c, nil
}

func (l *Listener) run(ctx context.Context, cfg *pgx.ConnConfig, channel, name string, log *slog.Logger, handle func(string), c *pgx.Conn) {
	defer close(l.done)
	backoff := MinBackoff
	for {
		for c == nil {
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
			var err error
			if c, err = connect(ctx, cfg, channel); err != nil {
				if ctx.Err() != nil {
					return
				}
				log.Warn("pgstore: "+name+" listener reconnect failed", "err", err, "retry_in", backoff)
				backoff = min(2*backoff, MaxBackoff)
				continue
			}
			log.Info("pgstore: " + name + " listener reconnected; notifications sent while disconnected were lost")
			backoff = MinBackoff
		}
		n, err := c.WaitForNotification(ctx)
		if err != nil {
			closeQuietly(c)
			c = nil
			if ctx.Err() != nil {
				return
			}
			log.Warn("pgstore: "+name+" listener connection lost", "err", err)
			continue
		}
		handle(n.Payload)
	}
}

func closeQuietly(c *pgx.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = c.Close(ctx)
}
