package pgstore

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// connPool hands out pgx connections: at most max open at once, idle ones
// reused most recent first, broken ones (or ones left inside a transaction)
// closed instead of reused.
type connPool struct {
	cfg    *pgx.ConnConfig
	tokens chan struct{}

	mu     sync.Mutex
	idle   []pooled
	closed bool
}

type pooled struct {
	c        *pgx.Conn
	returned time.Time
}

// idleLimit: connections idle longer are closed rather than reused.
const idleLimit = 5 * time.Minute

func newConnPool(cfg *pgx.ConnConfig, max int) *connPool {
	return &connPool{cfg: cfg, tokens: make(chan struct{}, max)}
}

func (p *connPool) get(ctx context.Context) (*pgx.Conn, error) {
	select {
	case p.tokens <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("pgstore: waiting for a connection: %w", ctx.Err())
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		<-p.tokens
		return nil, errClosed
	}
	var c *pgx.Conn
	var stale []*pgx.Conn
	for c == nil && len(p.idle) > 0 {
		last := p.idle[len(p.idle)-1]
		p.idle = p.idle[:len(p.idle)-1]
		if last.c.IsClosed() || time.Since(last.returned) > idleLimit {
			stale = append(stale, last.c)
			continue
		}
		c = last.c
	}
	p.mu.Unlock()
	for _, s := range stale {
		closeQuietly(s)
	}
	if c != nil {
		return c, nil
	}
	c, err := pgx.ConnectConfig(ctx, p.cfg)
	if err != nil {
		<-p.tokens
		return nil, fmt.Errorf("pgstore: connect: %w", err)
	}
	return c, nil
}

func (p *connPool) put(c *pgx.Conn) {
	defer func() { <-p.tokens }()
	if c.IsClosed() || c.PgConn().IsBusy() || c.PgConn().TxStatus() != 'I' {
		closeQuietly(c)
		return
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		closeQuietly(c)
		return
	}
	p.idle = append(p.idle, pooled{c: c, returned: time.Now()})
	p.mu.Unlock()
}

func (p *connPool) close() {
	p.mu.Lock()
	p.closed = true
	idle := p.idle
	p.idle = nil
	p.mu.Unlock()
	for _, ic := range idle {
		closeQuietly(ic.c)
	}
}

func closeQuietly(c *pgx.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = c.Close(ctx)
}
