package gateway

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	weft "github.com/weftmcp/weft"
	"github.com/weftmcp/weft/client"
)

// The processes of a 2025-era command upstream.
//
// stdio does not say which call a server request belongs to (servers of
// the 2025 era rarely echo the progress token), yet JSON-RPC allows many
// requests in flight on one process. So each process carries any number of
// calls, of which at most one "attends" at a time: the only call the
// server's requests and unnamed notifications can be routed to
// (client.Request.Attending). A call attends from its start until it asks
// for input; it then parks, stops attending and gives the process's turn
// to the next call, and takes the turn of its own process again before its
// answers go upstream (with OneCallPerProcess a parked call keeps the
// turn).
//
// Routing to the attending call is only right while the server speaks of
// the calls it has not answered yet. Two things break that, and the pool
// keeps both within one caller:
//
//   - A process carries the calls of one caller at a time, its owner: a
//     request the server sends for a parked call while another call
//     attends (a second question asked before the first is answered), or
//     for a call the gateway gave up on, can only reach a call of the same
//     caller. A process is owned from its first call's start until its
//     calls reach 0; then it goes to any caller.
//   - A process on which a call ended without the server's final answer
//     (cancelled, timed out, refused while it waited, never retried) is
//     tainted: the server may still be working on that call and ask for
//     input for it. It is closed (the upstream's primary connection:
//     replaced) once its calls reach 0, and takes no new call meanwhile
//     but its owner's when the owner has no other process to run it on
//     (at its share), so what the server sends for the abandoned call
//     meets no call, or its owner's.
//
// Working capacity is shared fairly: one caller owns at most
// MaxCallsPerCaller processes (its parked calls count through the
// processes they sit on), a new call of a caller goes to a free process it
// owns before it takes another, and a process's turn that frees up goes to
// a parked call of that process resuming, else to a waiting caller that
// can use it, the one owning the fewest processes first (first come among
// equals), so one caller's backlog does not delay another's first call.

// procPool holds the processes of one 2025-era command upstream.
type procPool struct {
	u         *upstream
	max       int // processes
	perCaller int // processes one caller owns

	mu      sync.Mutex
	procs   []*proc
	dialing int
	owned   map[string]int // processes owned (or being started) by caller
	waiters []*waiter
	seq     int
}

// proc is one process of the pool.
type proc struct {
	c       *conn
	primary bool   // the upstream's connection (lists too), not closed here
	busy    bool   // a call attends
	calls   int    // calls on it, attending or parked
	owner   string // the caller of its calls (calls > 0)
	// tainted: a call ended on it without the server's final answer; it
	// takes no new call and goes when its calls reach 0.
	tainted bool
}

// waiter is a call waiting for a turn: of a given process (a parked call
// resuming), or of any (a new call).
type waiter struct {
	caller string
	want   *proc
	ch     chan grant
	seq    int
}

// grant hands a waiter a process's turn, or the right to start one.
type grant struct {
	p    *proc
	dial bool
}

func newProcPool(u *upstream) *procPool {
	return &procPool{u: u, max: u.cfg.maxProcesses(), perCaller: u.cfg.maxCallsPerCaller(), owned: map[string]int{}}
}

// turn is one call's place on a process: whether it attends, and the
// means to park and resume.
type turn struct {
	pool      *procPool
	p         *proc
	caller    string
	mu        sync.Mutex // serializes resume
	attending atomic.Bool
	ended     bool // guarded by pool.mu
}

// callerKey names the caller of req for the fair shares of an upstream:
// the server's own fairness key (weft.Request.Caller: partition, else
// principal, else an anonymous caller's remote host), plus the rate key
// when admission sets one.
func callerKey(req *weft.Request) string {
	return req.Caller() + "\x00" + req.Identity.RateKey
}

func (pp *procPool) alive(p *proc) bool {
	select {
	case <-p.c.done():
		return false
	default:
		return true
	}
}

// syncPrimary makes primary, the upstream's current connection, the
// pool's first process (the upstream reconnects it when it breaks, and
// replaces it when the pool retires it tainted).
func (pp *procPool) syncPrimary(primary *conn) {
	for _, p := range pp.procs {
		if p.c == primary {
			return
		}
	}
	if primary.retired.Load() {
		return // the upstream connects again on its next use
	}
	pp.procs = slices.DeleteFunc(pp.procs, func(p *proc) bool { return p.primary && p.calls == 0 })
	for _, p := range pp.procs {
		p.primary = false // its calls finish; then it is closed here
	}
	pp.procs = slices.Insert(pp.procs, 0, &proc{c: primary, primary: true})
}

// acquire gives a call of caller a turn on a process: a free one it owns
// (the one carrying the fewest calls), else a free unowned one or a new
// one while it owns fewer than perCaller and there are fewer than max,
// else the next that frees up, within the upstream's callTimeout.
func (pp *procPool) acquire(ctx context.Context, primary *conn, caller string) (*turn, error) {
	wctx, cancel := context.WithTimeout(ctx, pp.u.cfg.callTimeout())
	defer cancel()
	pp.mu.Lock()
	pp.syncPrimary(primary)
	w := pp.enqueue(caller, nil)
	pp.dispatch()
	pp.mu.Unlock()
	select {
	case g := <-w.ch:
		if g.dial {
			return pp.dial(ctx, caller)
		}
		return pp.turnOf(g.p, caller), nil
	case <-wctx.Done():
		if pp.withdraw(w) {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, fmt.Errorf("%w: all %d processes stayed busy for %s (processes this caller's calls run or wait on: %d of at most %d, maxCallsPerCaller)",
				context.DeadlineExceeded, pp.max, pp.u.cfg.callTimeout(), pp.ownedBy(caller), pp.perCaller)
		}
		g := <-w.ch // granted meanwhile
		if g.dial {
			return pp.dial(ctx, caller)
		}
		return pp.turnOf(g.p, caller), nil
	}
}

func (pp *procPool) ownedBy(caller string) int {
	pp.mu.Lock()
	defer pp.mu.Unlock()
	return pp.owned[caller]
}

func (pp *procPool) turnOf(p *proc, caller string) *turn {
	t := &turn{pool: pp, p: p, caller: caller}
	t.attending.Store(true)
	return t
}

// dial starts a process for a call of caller, whose ownership (owned) and
// place (dialing) are reserved.
func (pp *procPool) dial(ctx context.Context, caller string) (*turn, error) {
	u := pp.u
	c, err := dial(context.WithoutCancel(ctx), &u.cfg, u.hc, u.headers, u.unrouted, u.outsideCall, u.g.log)
	pp.mu.Lock()
	defer pp.mu.Unlock()
	pp.dialing--
	if err == nil && u.g.isClosed() {
		_ = c.close()
		err = fmt.Errorf("gateway: upstream %q: the gateway is closed", u.cfg.Name)
	}
	if err != nil {
		pp.disown(caller)
		pp.dispatch()
		return nil, err
	}
	p := &proc{c: c, busy: true, calls: 1, owner: caller}
	pp.procs = append(pp.procs, p)
	return pp.turnOf(p, caller), nil
}

func (pp *procPool) disown(caller string) {
	if pp.owned[caller]--; pp.owned[caller] <= 0 {
		delete(pp.owned, caller)
	}
}

func (pp *procPool) enqueue(caller string, want *proc) *waiter {
	pp.seq++
	w := &waiter{caller: caller, want: want, ch: make(chan grant, 1), seq: pp.seq}
	pp.waiters = append(pp.waiters, w)
	return w
}

// withdraw removes w from the queue; false: it was granted meanwhile.
func (pp *procPool) withdraw(w *waiter) bool {
	pp.mu.Lock()
	defer pp.mu.Unlock()
	i := slices.Index(pp.waiters, w)
	if i < 0 {
		return false
	}
	pp.waiters = slices.Delete(pp.waiters, i, i+1)
	return true
}

// dispatch hands the turns of free processes to waiters: a process's own
// resuming calls first, then new calls that can use a free process or
// start one, the caller owning the fewest processes first. Processes
// carrying no call that are dead or tainted go.
func (pp *procPool) dispatch() {
	pp.procs = slices.DeleteFunc(pp.procs, func(p *proc) bool {
		if p.calls > 0 || (!p.tainted && (p.primary || pp.alive(p))) {
			return false
		}
		if p.primary {
			p.c.retired.Store(true) // the upstream connects again
		}
		go p.c.close()
		return true
	})
	for _, p := range pp.procs { // a parked call resuming on its process
		if p.busy || !pp.alive(p) {
			continue
		}
		if i := slices.IndexFunc(pp.waiters, func(w *waiter) bool { return w.want == p }); i >= 0 {
			w := pp.waiters[i]
			pp.waiters = slices.Delete(pp.waiters, i, i+1)
			p.busy = true
			w.ch <- grant{p: p}
		}
	}
	for { // new calls
		i, g := pp.next()
		if i < 0 {
			return
		}
		w := pp.waiters[i]
		pp.waiters = slices.Delete(pp.waiters, i, i+1)
		if g.dial {
			pp.dialing++
			pp.owned[w.caller]++
		} else {
			if g.p.calls == 0 {
				g.p.owner = w.caller
				pp.owned[w.caller]++
			}
			g.p.busy = true
			g.p.calls++
		}
		w.ch <- g
	}
}

// next finds the new call to serve next and what it gets: of the waiters
// that can be served now, the one whose caller owns the fewest processes,
// first come among equals; -1 when none can.
func (pp *procPool) next() (int, grant) {
	best, bestGrant := -1, grant{}
	for i, w := range pp.waiters {
		if w.want != nil || best >= 0 && pp.owned[w.caller] >= pp.owned[pp.waiters[best].caller] {
			continue
		}
		if g, ok := pp.placeFor(w.caller); ok {
			best, bestGrant = i, g
		}
	}
	return best, bestGrant
}

// placeFor finds where a new call of caller can run now: a free process
// it owns that is not tainted (the one carrying the fewest calls), else,
// below its share, a free process no one owns, else a new process while
// there are fewer than max; else, at its share, a free tainted process it
// owns (rather than wait for its calls there to end: what the server
// still sends for the abandoned call may then reach this call, of the
// same caller).
func (pp *procPool) placeFor(caller string) (grant, bool) {
	var own, ownTainted, unowned *proc
	for _, p := range pp.procs {
		if p.busy || !pp.alive(p) {
			continue
		}
		switch {
		case p.calls > 0 && p.owner == caller && p.tainted:
			if ownTainted == nil || p.calls < ownTainted.calls {
				ownTainted = p
			}
		case p.calls > 0 && p.owner == caller:
			if own == nil || p.calls < own.calls {
				own = p
			}
		case p.calls == 0 && !p.tainted && unowned == nil:
			unowned = p
		}
	}
	switch {
	case own != nil:
		return grant{p: own}, true
	case pp.owned[caller] >= pp.perCaller:
		if ownTainted != nil {
			return grant{p: ownTainted}, true
		}
		return grant{}, false
	case unowned != nil:
		return grant{p: unowned}, true
	case len(pp.procs)+pp.dialing < pp.max:
		return grant{dial: true}, true
	}
	return grant{}, false
}

// releaseLocked gives up an attending turn (pool.mu held).
func (t *turn) releaseLocked() {
	if t.attending.Swap(false) {
		t.p.busy = false
	}
}

// park stops the call attending: it waits for its client, and another
// call of its caller may run on the process.
func (t *turn) park() {
	if t == nil {
		return
	}
	pp := t.pool
	pp.mu.Lock()
	defer pp.mu.Unlock()
	t.releaseLocked()
	pp.dispatch()
}

// resume makes the call attend again, on its own process (its state lives
// there), once the call attending there parks or ends.
func (t *turn) resume(ctx context.Context) error {
	if t == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.attending.Load() {
		return nil
	}
	pp := t.pool
	pp.mu.Lock()
	if t.ended {
		pp.mu.Unlock()
		return context.Canceled
	}
	if !t.p.busy {
		t.p.busy = true
		t.attending.Store(true)
		pp.mu.Unlock()
		return nil
	}
	w := pp.enqueue(t.caller, t.p)
	pp.mu.Unlock()
	select {
	case <-w.ch:
		return t.granted()
	case <-ctx.Done():
		if !pp.withdraw(w) {
			<-w.ch
			if t.granted() == nil {
				t.park()
			}
		}
		return ctx.Err()
	}
}

// granted takes the turn dispatch handed a resuming call, unless the
// call ended meanwhile (then the turn goes back).
func (t *turn) granted() error {
	pp := t.pool
	pp.mu.Lock()
	defer pp.mu.Unlock()
	if t.ended {
		t.p.busy = false
		pp.dispatch()
		return context.Canceled
	}
	t.attending.Store(true)
	return nil
}

// done ends the call's use of its process; answered reports whether the
// server gave the call its final answer (a result or an error response).
// Without it the server may still be working on the call, and the process
// is tainted.
func (t *turn) done(answered bool) {
	if t == nil {
		return
	}
	pp := t.pool
	pp.mu.Lock()
	defer pp.mu.Unlock()
	if t.ended {
		return
	}
	t.ended = true
	t.releaseLocked()
	if !answered {
		t.p.tainted = true
	}
	if t.p.calls--; t.p.calls == 0 {
		t.p.owner = ""
		pp.disown(t.caller)
	}
	pp.dispatch()
}

// attends is the call's client.Request.Attending.
func (t *turn) attends() bool { return t.attending.Load() }

// close stops the pool's processes (the primary is the upstream's).
func (pp *procPool) close() []error {
	pp.mu.Lock()
	procs := pp.procs
	pp.procs = nil
	pp.mu.Unlock()
	var errs []error
	for _, p := range procs {
		if !p.primary {
			errs = append(errs, p.c.close())
		}
	}
	return errs
}

// running returns the pool's live processes (for the tests).
func (pp *procPool) running() int {
	pp.mu.Lock()
	defer pp.mu.Unlock()
	n := 0
	for _, p := range pp.procs {
		if pp.alive(p) {
			n++
		}
	}
	return n
}

// admitParked admits a call of caller to wait for input on this instance:
// at most MaxParkedCalls of the upstream's calls, MaxParkedPerCaller of
// one caller's, so that no caller fills what the others need. leave ends
// the call's place.
func (u *upstream) admitParked(caller string) (leave func(), err error) {
	u.parkedMu.Lock()
	defer u.parkedMu.Unlock()
	if u.parked >= u.cfg.maxParkedCalls() {
		return nil, fmt.Errorf("Too many calls are waiting for input on upstream %q (maxParkedCalls %d); retry later", u.cfg.Name, u.cfg.maxParkedCalls())
	}
	if u.parkedBy[caller] >= u.cfg.maxParkedPerCaller() {
		return nil, fmt.Errorf("Too many of your calls are waiting for input on upstream %q (maxParkedPerCaller %d): answer or abandon them, then retry", u.cfg.Name, u.cfg.maxParkedPerCaller())
	}
	if u.parkedBy == nil {
		u.parkedBy = map[string]int{}
	}
	u.parked++
	u.parkedBy[caller]++
	return sync.OnceFunc(func() {
		u.parkedMu.Lock()
		defer u.parkedMu.Unlock()
		u.parked--
		if u.parkedBy[caller]--; u.parkedBy[caller] <= 0 {
			delete(u.parkedBy, caller)
		}
	}), nil
}

// answered reports whether err, the outcome of an upstream call, is the
// server's final answer to it (a result, or an error response), after
// which the server sends nothing more for the call.
func answered(err error) bool {
	var re *client.RPCError
	return err == nil || errors.As(err, &re)
}
