package gateway

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	weft "github.com/weftmcp/weft"
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
// answers go upstream. Parked calls therefore hold no working capacity:
// MaxProcesses bounds the calls running (attending) at once, and the parked
// calls are bounded apart (MaxParkedCalls, MaxParkedPerCaller: parked.go's
// admit).
//
// Working capacity is shared fairly: one caller attends on at most
// MaxCallsPerCaller processes at once, and a turn that frees up goes to a
// parked call of that process resuming, else to the waiting caller running
// the fewest calls (first come among equals), so one caller's backlog does
// not delay another's first call.

// procPool holds the processes of one 2025-era command upstream.
type procPool struct {
	u         *upstream
	max       int // processes
	perCaller int // turns of one caller

	mu      sync.Mutex
	procs   []*proc
	dialing int
	held    map[string]int // turns held by caller
	waiters []*waiter
	seq     int
}

// proc is one process of the pool.
type proc struct {
	c       *conn
	primary bool // the upstream's connection (lists too), not closed here
	busy    bool // a call attends
	calls   int  // calls on it, attending or parked
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
	perCaller := u.cfg.maxCallsPerCaller()
	return &procPool{u: u, max: u.cfg.maxProcesses(), perCaller: perCaller, held: map[string]int{}}
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

// syncPrimary makes primary the pool's first process (the upstream
// reconnects it when it breaks).
func (pp *procPool) syncPrimary(primary *conn) {
	for _, p := range pp.procs {
		if p.c == primary {
			return
		}
	}
	pp.procs = slices.DeleteFunc(pp.procs, func(p *proc) bool { return p.primary })
	pp.procs = slices.Insert(pp.procs, 0, &proc{c: primary, primary: true})
}

// acquire gives a call of caller a turn on a process: a free one (the one
// carrying the fewest calls), else a new one while there are fewer than
// max, else the next that frees up, within the upstream's callTimeout.
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
		if pp.withdraw(w, caller) {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, fmt.Errorf("%w: all %d processes stayed busy for %s (calls running on them: %d of this caller's at most %d)",
				context.DeadlineExceeded, pp.max, pp.u.cfg.callTimeout(), pp.heldBy(caller), pp.perCaller)
		}
		g := <-w.ch // granted meanwhile
		if g.dial {
			return pp.dial(ctx, caller)
		}
		return pp.turnOf(g.p, caller), nil
	}
}

func (pp *procPool) heldBy(caller string) int {
	pp.mu.Lock()
	defer pp.mu.Unlock()
	return pp.held[caller]
}

func (pp *procPool) turnOf(p *proc, caller string) *turn {
	t := &turn{pool: pp, p: p, caller: caller}
	t.attending.Store(true)
	return t
}

// dial starts a process for a call of caller, whose turn (held) and place
// (dialing) are reserved.
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
		pp.held[caller]--
		pp.dispatch()
		return nil, err
	}
	p := &proc{c: c, busy: true, calls: 1}
	pp.procs = append(pp.procs, p)
	return pp.turnOf(p, caller), nil
}

func (pp *procPool) enqueue(caller string, want *proc) *waiter {
	pp.seq++
	w := &waiter{caller: caller, want: want, ch: make(chan grant, 1), seq: pp.seq}
	pp.waiters = append(pp.waiters, w)
	return w
}

// withdraw removes w from the queue; false: it was granted meanwhile.
func (pp *procPool) withdraw(w *waiter, caller string) bool {
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
// resuming calls first, then new calls, the caller running the fewest calls
// first; then lets a new call start a process while there are fewer than
// max. Dead processes carrying no call are dropped.
func (pp *procPool) dispatch() {
	pp.procs = slices.DeleteFunc(pp.procs, func(p *proc) bool {
		if p.primary || p.calls > 0 || pp.alive(p) {
			return false
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
			pp.held[w.caller]++
			w.ch <- grant{p: p}
		}
	}
	for { // new calls, on the free process carrying the fewest calls
		var free *proc
		for _, p := range pp.procs {
			if !p.busy && pp.alive(p) && (free == nil || p.calls < free.calls) {
				free = p
			}
		}
		if free == nil {
			break
		}
		w := pp.next()
		if w == nil {
			break
		}
		free.busy = true
		free.calls++
		pp.held[w.caller]++
		w.ch <- grant{p: free}
	}
	for len(pp.procs)+pp.dialing < pp.max {
		w := pp.next()
		if w == nil {
			break
		}
		pp.dialing++
		pp.held[w.caller]++
		w.ch <- grant{dial: true}
	}
}

// next removes and returns the new call to serve next: of the callers
// below their share, the one running the fewest calls, first come among
// equals.
func (pp *procPool) next() *waiter {
	best := -1
	for i, w := range pp.waiters {
		if w.want != nil || pp.held[w.caller] >= pp.perCaller {
			continue
		}
		if best < 0 || pp.held[w.caller] < pp.held[pp.waiters[best].caller] {
			best = i
		}
	}
	if best < 0 {
		return nil
	}
	w := pp.waiters[best]
	pp.waiters = slices.Delete(pp.waiters, best, best+1)
	return w
}

// release gives up an attending turn (pool.mu held).
func (t *turn) releaseLocked() {
	pp := t.pool
	if t.attending.Swap(false) {
		t.p.busy = false
		if pp.held[t.caller]--; pp.held[t.caller] <= 0 {
			delete(pp.held, t.caller)
		}
	}
}

// park stops the call attending: it waits for its client, and another
// call may run on the process.
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
		pp.held[t.caller]++
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
		if !pp.withdraw(w, t.caller) {
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
		if pp.held[t.caller]--; pp.held[t.caller] <= 0 {
			delete(pp.held, t.caller)
		}
		pp.dispatch()
		return context.Canceled
	}
	t.attending.Store(true)
	return nil
}

// done ends the call's use of its process.
func (t *turn) done() {
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
	t.p.calls--
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
