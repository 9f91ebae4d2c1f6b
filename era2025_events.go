package weft

import (
	"context"
	"errors"
	"time"

	"github.com/weftmcp/weft/sessionstore"
)

// A 2025-era session hears about changes outside its requests: tools,
// prompts and resources list changes, and resources/updated for the URIs it
// subscribed to. The session's event pump writes them to whatever carries
// them on this instance: the GET stream of an HTTP session (era2025_http.go)
// or the connection of a stdio session (transport_stdio.go). One pump serves
// both, so the two transports deliver the same events with the same
// coalescing (the bus subscriber keeps each pending event once).

// eventPump is one session's event stream on this instance.
type eventPump struct {
	sid   string
	store sessionstore.Store
	// sub is the session's bus subscription, made before the stream was
	// announced so that no event in between is lost.
	sub *subscriber
	// subs are the session's subscriptions as last read (read again when
	// a resource update arrives).
	subs []string
	out  stream
	// ended is closed when the session ends on this instance (an HTTP
	// DELETE); nil when nothing but ctx ends it.
	ended <-chan struct{}
	// keepAlive, when set, is written every Options.KeepAlive; an error
	// ends the pump.
	keepAlive func() error
	// check, when positive, is how often the session is read again: that
	// keeps it alive while the stream is open (up to its absolute expiry)
	// and notices its end on another instance.
	check time.Duration
}

// pumpEvents writes the session's events until ctx ends, the session ends
// or goes, the server shuts down, or a write fails. The session's
// subscriptions are read from its store when a resource update arrives, so
// a subscription made or dropped by a request served elsewhere (another
// instance of a fleet, another goroutine) counts from the next update on.
func (l *legacyServer) pumpEvents(ctx context.Context, p eventPump) {

	var keep, check <-chan time.Time
	if p.keepAlive != nil {
		t := time.NewTicker(l.env.keepAlive)
		defer t.Stop()
		keep = t.C
	}
	if p.check > 0 {
		t := time.NewTicker(p.check)
		defer t.Stop()
		check = t.C
	}
	subs := p.subs
	reload := func() bool {
		sess, err := p.store.Get(ctx, p.sid)
		if errors.Is(err, sessionstore.ErrNotFound) {
			return false
		}
		if err == nil {
			subs = sess.Subscriptions
		} else if ctx.Err() == nil {
			l.env.log.Warn("weft: reading a legacy session's subscriptions failed; keeping the last known", "err", err)
		}
		return true
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-l.env.done:
			return
		case <-p.ended:
			return
		case <-keep:
			if p.keepAlive() != nil {
				return
			}
		case <-check:
			if !reload() {
				return
			}
		case <-p.sub.wake:
			reloaded := false
			for _, ev := range p.sub.drain() {
				if ev.kind == evResourceUpdated {
					if !reloaded {
						if !reload() {
							return
						}
						reloaded = true
					}
					if !(&filter{uris: subs}).wants(ev) {
						continue
					}
				}
				if p.out.send(ev.frame()) != nil {
					return
				}
			}
		}
	}
}

// stdioEvents is the event pump of the 2025-era session of a stdio
// connection; it runs from the session's initialize response until the
// connection ends (ctx).
func (l *legacyServer) stdioEvents(ctx context.Context, conn *stdioConn) {
	sid, sub := conn.session()
	if sub == nil {
		return
	}
	l.pumpEvents(ctx, eventPump{sid: sid, store: l.stdioStore, sub: sub, out: &stdioNotifier{out: conn, ctx: ctx}})
}

// endStdio releases the 2025-era session of a stdio connection that ended
// (its requests and its event pump are done): its bus subscription, its
// record and what this instance holds for it.
func (l *legacyServer) endStdio(conn *stdioConn) {
	sid, sub := conn.session()
	if sub != nil {
		l.env.bus.unsubscribe(sub)
	}
	if sid == "" {
		return
	}
	if _, err := l.stdioStore.Delete(context.Background(), sid); err != nil {
		l.env.log.Warn("weft: deleting the session of a closed stdio connection failed", "err", err)
	}
	l.local.End(sid)
}
