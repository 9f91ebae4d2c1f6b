package pgstore

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// startListener connects the listening connection and returns once LISTEN is
// in effect, so that events published after Open returns are heard.
func (s *Store) startListener(ctx context.Context, cfg *pgx.ConnConfig) error {
	c, err := s.listenConn(ctx, cfg)
	if err != nil {
		return err
	}
	lctx, cancel := context.WithCancel(context.Background())
	s.stopListen = cancel
	s.listenDone = make(chan struct{})
	go s.listen(lctx, cfg, c)
	return nil
}

func (s *Store) listenConn(ctx context.Context, cfg *pgx.ConnConfig) (*pgx.Conn, error) {
	c, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("pgstore: connect listener: %w", err)
	}
	if _, err := c.Exec(ctx, "LISTEN "+pgx.Identifier{s.channel}.Sanitize()); err != nil {
		closeConn(c)
		return nil, fmt.Errorf("pgstore: listen: %w", err)
	}
	return c, nil
}

// listen delivers notifications to the hub until ctx is done, reconnecting
// with backoff when the connection breaks (events sent meanwhile are lost).
func (s *Store) listen(ctx context.Context, cfg *pgx.ConnConfig, c *pgx.Conn) {
	defer close(s.listenDone)
	backoff := 100 * time.Millisecond
	for {
		for c == nil {
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
			var err error
			if c, err = s.listenConn(ctx, cfg); err != nil {
				if ctx.Err() != nil {
					return
				}
				s.log.Warn("pgstore: listener reconnect failed", "err", err, "retry_in", backoff)
				backoff = min(2*backoff, 5*time.Second)
				continue
			}
			s.log.Info("pgstore: listener reconnected; events sent while disconnected were lost")
			backoff = 100 * time.Millisecond
		}
		n, err := c.WaitForNotification(ctx)
		if err != nil {
			closeConn(c)
			c = nil
			if ctx.Err() != nil {
				return
			}
			s.log.Warn("pgstore: listener connection lost", "err", err)
			continue
		}
		channel, payload, ok := strings.Cut(n.Payload, "\n")
		if !ok {
			continue
		}
		_ = s.hub.Publish(ctx, channel, payload)
	}
}

func closeConn(c *pgx.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = c.Close(ctx)
}
