package task

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Handler runs one step of a task. It returns the step's Outcome, or a Go
// error, which fails the task with the sanitized InternalErrorJSON (the error
// itself is only logged). A panic is recovered and treated the same way.
//
// The context is cancelled when the client requests cancellation
// (context.Cause is ErrCancelRequested), when the lease is lost
// (ErrLeaseLost), or when the Runner shuts down and the step overran the
// shutdown timeout (ErrShutdown). After a cancellation request, returning an
// error or Cancel() ends the task Cancelled; returning Complete(...) still
// completes it.
//
// Steps run at least once: a step whose worker died is re-run, so side
// effects should be made idempotent with Job.IdempotencyKey.
type Handler func(ctx context.Context, job *Job) (Outcome, error)

// Job is the view of a claimed task that a Handler gets.
type Job struct {
	rec   *Record
	store Store
}

// ID returns the task ID.
func (j *Job) ID() string { return j.rec.ID }

// Owner returns the identity of the task's creator.
func (j *Job) Owner() Owner { return j.rec.Owner }

// Operation returns what the task runs (the tool name).
func (j *Job) Operation() string { return j.rec.Operation }

// Params returns the stored request parameters.
func (j *Job) Params() json.RawMessage { return clone(j.rec.Params) }

// State returns the continuation state stored by the previous step (nil for
// the first step unless the task was created with one).
func (j *Job) State() json.RawMessage { return clone(j.rec.State) }

// InputResponses returns the JSON object of input responses received since
// the previous step, keyed by input key (nil for the first step).
func (j *Job) InputResponses() json.RawMessage { return clone(j.rec.InputResponses) }

// Step returns the 1-based step number.
func (j *Job) Step() int { return j.rec.Step }

// Attempt returns how many times this step has been claimed, including this
// one; above 1 means an earlier run was cut off.
func (j *Job) Attempt() int { return j.rec.Attempts }

// Fence returns the fencing token of this run's lease, for handlers that pass
// it on to fenced external systems.
func (j *Job) Fence() int64 { return j.rec.Fence }

// IdempotencyKey returns "<task ID>/<step>": the same for every attempt of
// this step and different for every other step.
func (j *Job) IdempotencyKey() string { return j.rec.ID + "/" + strconv.Itoa(j.rec.Step) }

// Progress sets the task's status message (a fenced write). It returns
// ErrLeaseLost if this run no longer holds the task.
func (j *Job) Progress(ctx context.Context, msg string) error {
	return j.store.SetStatusMessage(ctx, j.rec.ID, j.rec.Fence, msg)
}

// Runner defaults.
const (
	DefaultWorkers         = 4
	DefaultLease           = 30 * time.Second
	DefaultPollInterval    = time.Second
	DefaultShutdownTimeout = 10 * time.Second
	DefaultSweepInterval   = time.Minute
	DefaultRetention       = time.Hour
)

// Live-task bounds the framework applies by default (weft.TaskOptions;
// task.Quota in Store.Create).
const (
	// DefaultMaxTasksPerIdentity bounds the live tasks of one identity
	// (principal within its partition): far more than one client runs at
	// once, few enough that a flood of creates stops long before the store
	// fills.
	DefaultMaxTasksPerIdentity = 1000
	// DefaultMaxTasksPerPartition bounds the live tasks of one partition,
	// all its principals together.
	DefaultMaxTasksPerPartition = 10000
)

// DefaultPartitionWorkers is the default Runner.MaxPartitionWorkers for a
// runner of workers workers: all but a quarter of them (at least one kept
// for the other partitions when workers >= 2, and at least one for the
// partition).
func DefaultPartitionWorkers(workers int) int {
	if workers <= 1 {
		return 1
	}
	return workers - max(1, workers/4)
}

// storingPerWorker bounds the steps whose outcome is being stored, per
// worker: a store that commits outcomes in groups (pgstore) takes longer
// for each than a handler that does little, and a worker need not wait.
const storingPerWorker = 4

// Runner is a pool of workers that claim runnable tasks from Store and run
// their steps with Handler. Configure the fields, then call Run. Several
// runners, in one process or many, may share a store.
type Runner struct {
	// Store is where tasks live; required.
	Store Store
	// Handler runs steps; required.
	Handler Handler
	// Workers is the number of step handlers run concurrently
	// (DefaultWorkers): the runner claims, in one Claim, steps for all its
	// free workers, plus, while steps are short, up to 2×Workers steps ahead
	// for the workers it expects to be free before its next claims return
	// (see PollInterval); it runs each step on its own goroutine. A worker is
	// free again once its handler returns, while the step's outcome is
	// stored (under its lease), for up to 4×Workers outcomes being stored at
	// a time.
	Workers int
	// MaxPartitionWorkers bounds the steps of one partition
	// (Owner.Partition) this runner runs at once, so that one tenant's slow
	// steps cannot occupy every worker: the others stay free for the other
	// partitions' tasks. Default (0): DefaultPartitionWorkers(Workers), a
	// quarter of the workers kept for the other partitions; at most
	// Workers.
	MaxPartitionWorkers int
	// Lease is how long a claim lasts without renewal (DefaultLease); the
	// lease is renewed every Lease/3, counted from the claim, while the step
	// runs.
	Lease time.Duration
	// PollInterval is how often an idle worker polls for work besides being
	// woken by ChannelRunnable events (DefaultPollInterval). It bounds how
	// long a task whose worker died waits after its lease expires, and how
	// long a step claimed ahead waits for a worker (also at most Lease/3)
	// before it is released for any runner to claim.
	PollInterval time.Duration
	// ShutdownTimeout bounds how long Run waits for running steps after its
	// context is done; steps still running are then cancelled with cause
	// ErrShutdown and left leased, to be re-run elsewhere after the lease
	// expires (DefaultShutdownTimeout).
	ShutdownTimeout time.Duration
	// SweepInterval is how often the runner calls Store.ExpireAndPurge
	// (DefaultSweepInterval); negative disables sweeping.
	SweepInterval time.Duration
	// Retention is passed to ExpireAndPurge (DefaultRetention).
	Retention time.Duration
	// ExpiredError is the error object of expired tasks (ExpiredErrorJSON).
	ExpiredError json.RawMessage
	// ExpiredMessage is the status message of expired tasks (ExpiredMessage).
	ExpiredMessage string
	// MaxAttempts, if positive, fails a step with InternalErrorJSON instead
	// of running it once it has been claimed more than MaxAttempts times (a
	// step that keeps killing its worker).
	MaxAttempts int
	// WorkerID names this runner in lease records (Record.LeaseOwner of every
	// step it runs); a random one by default.
	WorkerID string
	// Logger receives handler errors, panics and store trouble
	// (slog.Default()).
	Logger *slog.Logger
	// Now is the clock used for sweeping (time.Now).
	Now func() time.Time
}

// run is the state of one Run call.
type run struct {
	cfg  Runner
	log  *slog.Logger
	base context.Context // Run's ctx without its cancellation, for values

	wake    chan struct{}
	storing chan struct{} // a slot per step whose outcome is being stored

	mu        sync.Mutex
	steps     map[string]*stepRun // by task ID: the steps claimed and not yet ended or released
	claiming  bool                // a Store.Claim call has not returned
	cutOff    bool
	abandoned bool
}

// stepPhase is where a claimed step is; a stopping Run reports the steps it
// still waits for by phase.
type stepPhase int

const (
	stepAhead   stepPhase = iota // claimed ahead: waiting for a worker, or its lease being given back unrun
	stepRunning                  // its handler runs
	stepEnding                   // its handler returned: its outcome being stored, or its lease released
	stepPhases
)

// stepRun is a claimed step: waiting for a worker (cancel nil) or running.
type stepRun struct {
	rec    *Record
	cancel context.CancelCauseFunc // set under run.mu when the step starts
	poke   chan struct{}           // a cancellation event came: renew (and learn of it) at once
	phase  stepPhase               // under run.mu
}

func (r *Runner) config() (Runner, error) {
	c := *r
	if c.Store == nil || c.Handler == nil {
		return c, fmt.Errorf("task: runner: Store and Handler are required: %w", ErrInvalid)
	}
	if c.Workers <= 0 {
		c.Workers = DefaultWorkers
	}
	if c.MaxPartitionWorkers <= 0 {
		c.MaxPartitionWorkers = DefaultPartitionWorkers(c.Workers)
	}
	c.MaxPartitionWorkers = min(c.MaxPartitionWorkers, c.Workers)
	if c.Lease <= 0 {
		c.Lease = DefaultLease
	}
	if c.PollInterval <= 0 {
		c.PollInterval = DefaultPollInterval
	}
	if c.ShutdownTimeout <= 0 {
		c.ShutdownTimeout = DefaultShutdownTimeout
	}
	if c.SweepInterval == 0 {
		c.SweepInterval = DefaultSweepInterval
	}
	if c.Retention == 0 {
		c.Retention = DefaultRetention
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.WorkerID == "" {
		id, err := NewID()
		if err != nil {
			return c, fmt.Errorf("task: runner: %w", err)
		}
		c.WorkerID = "runner-" + id[:12]
	}
	return c, nil
}

// Run runs workers until ctx is done, then stops claiming, releases the
// steps claimed ahead that no worker started, waits up to ShutdownTimeout
// for running steps, cancels the ones still running (their leases are
// released, so another instance takes them over at once) and waits up to
// ShutdownTimeout more for their handlers to return. It returns nil after a
// clean stop, an error if the configuration is invalid or the store cannot
// be subscribed to, and an error naming what it gave up waiting for after
// the second ShutdownTimeout: handlers that ignored cancellation (their late
// outcomes are discarded), step outcomes still being stored, steps claimed
// ahead still being handed back, or a claim the store has not answered.
func (r *Runner) Run(ctx context.Context) error {
	cfg, err := r.config()
	if err != nil {
		return err
	}
	if ctx.Err() != nil {
		return nil
	}
	rn := &run{
		cfg:     cfg,
		log:     cfg.Logger.With("worker", cfg.WorkerID),
		base:    context.WithoutCancel(ctx),
		wake:    make(chan struct{}, cfg.Workers),
		storing: make(chan struct{}, storingPerWorker*cfg.Workers),
		steps:   make(map[string]*stepRun),
	}
	subCtx, stopSubs := context.WithCancel(ctx)
	defer stopSubs()
	runnable, err := cfg.Store.Subscribe(subCtx, ChannelRunnable)
	if err != nil {
		return fmt.Errorf("task: runner: subscribe to runnable tasks: %w", err)
	}
	cancels, err := cfg.Store.Subscribe(subCtx, ChannelCancel)
	if err != nil {
		return fmt.Errorf("task: runner: subscribe to cancellations: %w", err)
	}

	var bg sync.WaitGroup // dispatcher and sweeper
	bg.Go(func() { rn.dispatch(subCtx, runnable, cancels) })
	if cfg.SweepInterval > 0 {
		bg.Go(func() { rn.sweep(ctx) })
	}
	var workers sync.WaitGroup // the claim loop and the steps it started
	workers.Go(func() { rn.claimLoop(ctx, &workers) })

	<-ctx.Done()
	defer bg.Wait()
	done := make(chan struct{})
	go func() { workers.Wait(); close(done) }()
	timer := time.NewTimer(cfg.ShutdownTimeout)
	defer timer.Stop()
	select {
	case <-done:
		return nil
	case <-timer.C:
	}
	n := rn.cancelAll()
	rn.log.Warn("task runner: shutdown timeout; cancelled running steps, releasing their leases for re-run", "steps", n)
	timer.Reset(cfg.ShutdownTimeout)
	select {
	case <-done:
		return nil
	case <-timer.C:
	}
	rn.mu.Lock()
	rn.abandoned = true
	rn.mu.Unlock()
	select {
	case <-done: // ended as the timer fired
		return nil
	default:
	}
	return fmt.Errorf("task: runner stopped after %v waiting for %s", 2*cfg.ShutdownTimeout, rn.pending())
}

// pending describes what a stopping run still waits for: the steps by
// phase and a claim in flight.
func (rn *run) pending() string {
	rn.mu.Lock()
	var n [stepPhases]int
	for _, st := range rn.steps {
		n[st.phase]++
	}
	claiming := rn.claiming
	rn.mu.Unlock()
	var parts []string
	add := func(n int, one, many string) {
		switch {
		case n == 1:
			parts = append(parts, "1 "+one)
		case n > 1:
			parts = append(parts, fmt.Sprintf("%d %s", n, many))
		}
	}
	add(n[stepRunning], "handler ignoring cancellation", "handlers ignoring cancellation")
	add(n[stepEnding], "step outcome being stored", "step outcomes being stored")
	add(n[stepAhead], "step claimed ahead being handed back", "steps claimed ahead being handed back")
	if claiming {
		parts = append(parts, "a claim the store has not answered")
	}
	if len(parts) == 0 {
		return "the claim loop"
	}
	return strings.Join(parts, ", ")
}

// setPhase moves st to phase p.
func (rn *run) setPhase(st *stepRun, p stepPhase) {
	rn.mu.Lock()
	st.phase = p
	rn.mu.Unlock()
}

// setClaiming records whether a Store.Claim call is in flight.
func (rn *run) setClaiming(on bool) {
	rn.mu.Lock()
	rn.claiming = on
	rn.mu.Unlock()
}

// dispatch turns bus events into worker wake-ups and cancellation pokes.
func (rn *run) dispatch(ctx context.Context, runnable, cancels <-chan string) {
	for runnable != nil || cancels != nil {
		select {
		case <-ctx.Done():
			return
		case _, ok := <-runnable:
			if !ok {
				runnable = nil
				continue
			}
			select {
			case rn.wake <- struct{}{}:
			default:
			}
		case id, ok := <-cancels:
			if !ok {
				cancels = nil
				continue
			}
			rn.mu.Lock()
			if st := rn.steps[id]; st != nil {
				select {
				case st.poke <- struct{}{}:
				default:
				}
			}
			rn.mu.Unlock()
		}
	}
}

// sweep calls ExpireAndPurge every SweepInterval until ctx is done.
func (rn *run) sweep(ctx context.Context) {
	t := time.NewTicker(rn.cfg.SweepInterval)
	defer t.Stop()
	opts := SweepOptions{
		Retention:      rn.cfg.Retention,
		ExpiredError:   rn.cfg.ExpiredError,
		ExpiredMessage: rn.cfg.ExpiredMessage,
	}
	for {
		res, err := rn.cfg.Store.ExpireAndPurge(ctx, rn.cfg.Now(), opts)
		switch {
		case err != nil && ctx.Err() == nil:
			rn.log.Error("task runner: expire and purge failed", "err", err)
		case res.Expired > 0 || res.Purged > 0:
			rn.log.Debug("task runner: swept tasks", "expired", res.Expired, "purged", res.Purged)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// claimResult is what one Claim call of the claim loop returned.
type claimResult struct {
	recs  []*Record
	err   error
	asked int
	at    time.Time // when the claim started: the leases run from then at the latest
	wakes uint64    // the wake-ups counted when the claim started
}

// aheadStep is a step claimed ahead, waiting for a worker.
type aheadStep struct {
	st  *stepRun
	at  time.Time // when its claim started
	due time.Time // when it is released instead of started
}

// claimLoop claims steps and runs each on its own goroutine (in steps), at
// most Workers at a time, until ctx is done.
//
// Claims run one at a time, beside the dispatching of claimed steps to free
// workers. A claim asks for the free workers plus the steps to claim ahead:
// twice as many as the workers that became free while the previous claim was
// in flight (at most 2×Workers), the steps likely to be wanted before this
// claim and the next return. With short steps a worker then rarely waits for
// a claim's round trip and commit, and the claims grow until the workers,
// not the claims, are the limit; with long steps (no worker freed during a
// claim) nothing is claimed ahead. A step claimed ahead waits, in claim order, for a worker
// (a partition's steps only while it runs fewer than MaxPartitionWorkers),
// at most PollInterval after its claim returned and a third of a lease after
// its claim started (so that it starts with at least the lease margin the
// heartbeat keeps); then it is released (Store.Release) rather than run
// late, and any runner may claim it at once.
//
// While claims fill what they ask for, the loop claims again as soon as it
// has room; after one that found fewer tasks than it asked for (and no
// ChannelRunnable wake-up came since it started), it waits for a wake-up or
// PollInterval, or until a partition the claim left out (it held its
// MaxPartitionWorkers steps and as many claimed ahead) has room again. Each
// claim passes the partition whose first step came last in the previous
// claim as ClaimOptions.After, so the claims cycle through the partitions.
// Once ctx is done it waits for the claim in flight and
// releases every step claimed ahead, so that other runners take them over
// at once.
func (rn *run) claimLoop(ctx context.Context, steps *sync.WaitGroup) {
	workers, lease, perPart := rn.cfg.Workers, rn.cfg.Lease, rn.cfg.MaxPartitionWorkers
	free := workers                     // workers not running a step
	freed := make(chan string, workers) // the partition of the step that freed a worker
	running := map[string]int{}         // steps running, by partition
	queued := map[string]int{}          // steps claimed ahead, by partition
	after := ""                         // the partition the last claim served last
	excluded := map[string]bool{}       // the partitions the last claim excluded
	var queue []*aheadStep              // claimed ahead, in claim order
	results := make(chan claimResult, 1)
	inFlight := false
	ahead, freedDuring := 0, 0 // steps to claim ahead; workers freed during the claim in flight
	var wakes uint64           // ChannelRunnable wake-ups received
	idle := false              // waiting for a wake-up or the poll before claiming
	poll := time.NewTimer(rn.cfg.PollInterval)
	poll.Stop()
	defer poll.Stop()
	due := time.NewTimer(time.Hour)
	due.Stop()
	defer due.Stop()
	start := func(st *stepRun, at time.Time) {
		free--
		p := st.rec.Owner.Partition
		running[p]++
		steps.Go(func() { rn.runStep(st, at, func() { freed <- p }) })
	}
	release := func(a *aheadStep, why string) {
		steps.Go(func() { rn.releaseAhead(a.st, why) })
	}
	gotFreed := func(p string) {
		free++
		if running[p]--; running[p] <= 0 {
			delete(running, p)
		}
		if excluded[p] {
			// The last claim left this partition's tasks out: claim
			// again now that it has room.
			idle = false
		}
	}
	for ctx.Err() == nil {
		// Start the steps claimed ahead whose partition is below its
		// bound, in claim order (the store's round-robin across
		// partitions), and release those past due.
		now := time.Now()
		kept := queue[:0]
		for _, a := range queue {
			p := a.st.rec.Owner.Partition
			switch {
			case !now.Before(a.due):
				release(a, "claimed ahead and not started in time")
			case free > 0 && running[p] < perPart:
				start(a.st, a.at)
			default:
				kept = append(kept, a)
				continue
			}
			if queued[p]--; queued[p] <= 0 {
				delete(queued, p)
			}
		}
		clear(queue[len(kept):])
		queue = kept
		if !inFlight && !idle {
			if want := free + ahead - len(queue); want > 0 {
				inFlight, freedDuring = true, 0
				at, seen := time.Now(), wakes
				// Partitions holding their bound of workers, and as many
				// steps claimed ahead as the claims may take ahead, are
				// not claimed from.
				var exclude []string
				clear(excluded)
				for p, n := range running {
					if n+queued[p] >= perPart+ahead {
						exclude = append(exclude, p)
						excluded[p] = true
					}
				}
				opts := ClaimOptions{After: after, Exclude: exclude}
				go func() {
					// Not cancelled with ctx: the outcome of a claim cut
					// short is unknown, so its steps would stay leased.
					// Bounded so that a stopping runner is not held long by
					// a claim, but never below claimFloor: a short
					// ShutdownTimeout must not make every claim on a slow
					// database time out (no claim would ever succeed).
					cctx, cancel := context.WithTimeout(rn.base, min(lease, max(rn.cfg.ShutdownTimeout, claimFloor)))
					defer cancel()
					rn.setClaiming(true)
					recs, err := rn.cfg.Store.Claim(cctx, rn.cfg.WorkerID, lease, want, opts)
					rn.setClaiming(false)
					results <- claimResult{recs: recs, err: err, asked: want, at: at, wakes: seen}
				}()
			}
		}
		if len(queue) > 0 {
			due.Reset(time.Until(queue[0].due))
		} else {
			due.Stop()
		}
		select {
		case <-ctx.Done():
		case p := <-freed:
			gotFreed(p)
			if inFlight {
				freedDuring++
			}
		case res := <-results:
			inFlight = false
			returned := time.Now()
			// Count first the workers freed before the claim returned but
			// not yet received here (select picks among ready cases at
			// random): they were freed during the claim, and they take
			// its steps now rather than after a wait in the queue.
			for counted := false; !counted; {
				select {
				case p := <-freed:
					gotFreed(p)
					freedDuring++
				default:
					counted = true
				}
			}
			ahead = min(2*freedDuring, 2*workers)
			if returned.Sub(res.at) >= lease/3 {
				ahead = 0 // claims this slow leave no time to wait for a worker
			}
			if res.err != nil {
				rn.log.Error("task runner: claim failed", "err", res.err)
			}
			seen := map[string]bool{}
			for _, rec := range res.recs {
				p := rec.Owner.Partition
				if !seen[p] {
					seen[p], after = true, p
				}
				st := rn.track(rec)
				if free > 0 && running[p] < perPart {
					start(st, res.at)
					continue
				}
				a := &aheadStep{st: st, at: res.at, due: returned.Add(rn.cfg.PollInterval)}
				if byLease := res.at.Add(lease / 3); byLease.Before(a.due) {
					a.due = byLease
				}
				queue = append(queue, a)
				queued[p]++
			}
			// A partition the claim left out that has room again (its
			// steps ended while the claim was in flight) may have more.
			roomAgain := false
			for p := range excluded {
				roomAgain = roomAgain || running[p]+queued[p] < perPart+ahead
			}
			switch {
			case res.err == nil && len(res.recs) == res.asked, roomAgain:
				idle = false // there may be more
			case res.wakes == wakes:
				// Nothing more to claim, and no task became runnable since
				// this claim started (a wake-up during it is answered by
				// claiming again).
				idle = true
				poll.Reset(rn.cfg.PollInterval)
			}
		case <-rn.wake:
			wakes++
			idle = false
		case <-poll.C:
			idle = false
		case <-due.C:
		}
	}
	if inFlight {
		for _, rec := range (<-results).recs {
			queue = append(queue, &aheadStep{st: rn.track(rec)})
		}
	}
	for _, a := range queue {
		release(a, "claimed ahead when the runner stopped")
	}
}

// claimFloor is the least time a claim is given, whatever ShutdownTimeout
// (a claim is never given longer than the lease it takes).
const claimFloor = 5 * time.Second

// track registers a claimed step, so that a cancellation event that comes
// while it waits for a worker pokes it as soon as it starts.
func (rn *run) track(rec *Record) *stepRun {
	st := &stepRun{rec: rec, poke: make(chan struct{}, 1)}
	rn.mu.Lock()
	rn.steps[rec.ID] = st
	rn.mu.Unlock()
	return st
}

// untrack removes st from the steps of the run.
func (rn *run) untrack(st *stepRun) {
	rn.mu.Lock()
	if rn.steps[st.rec.ID] == st {
		delete(rn.steps, st.rec.ID)
	}
	rn.mu.Unlock()
}

// releaseAhead gives back the lease of a claimed step that was not started
// (Store.Unclaim), so that any runner may claim it at once; its attempt is
// taken back, so MaxAttempts counts only the runs.
func (rn *run) releaseAhead(st *stepRun, why string) {
	defer rn.untrack(st)
	ctx, cancel := context.WithTimeout(rn.base, 5*time.Second)
	defer cancel()
	log := rn.log.With("task", st.rec.ID, "step", st.rec.Step, "attempt", st.rec.Attempts)
	if err := rn.cfg.Store.Unclaim(ctx, st.rec.ID, st.rec.Fence); err != nil {
		log.Warn("task runner: releasing a step "+why+" failed; left leased for re-run", "err", err)
		return
	}
	log.Debug("task runner: released a step " + why)
}

// runStep runs one claimed step to its end and records the outcome. It
// calls release, once, when the handler has returned: the worker is free
// for another step while this one's outcome is being stored (its lease
// still held), as long as fewer than 4×Workers outcomes are being stored.
// claimed is when its claim started (the lease runs from no earlier).
func (rn *run) runStep(st *stepRun, claimed time.Time, release func()) {
	defer rn.untrack(st)
	rec := st.rec
	released := false
	free := func() {
		if !released {
			released = true
			release()
		}
	}
	defer free()
	log := rn.log.With("task", rec.ID, "operation", rec.Operation, "step", rec.Step, "attempt", rec.Attempts)
	if rn.cfg.MaxAttempts > 0 && rec.Attempts > rn.cfg.MaxAttempts {
		rn.setPhase(st, stepEnding)
		log.Error("task runner: step exceeded max attempts; failing task", "max_attempts", rn.cfg.MaxAttempts)
		rn.finish(log, rec, Fail(json.RawMessage(InternalErrorJSON)))
		return
	}
	stepCtx, cancel := context.WithCancelCause(rn.base)
	defer cancel(nil)
	rn.mu.Lock()
	st.cancel = cancel
	st.phase = stepRunning
	if rn.cutOff {
		cancel(ErrShutdown)
	}
	rn.mu.Unlock()

	hbCtx, stopHB := context.WithCancel(rn.base)
	var hb sync.WaitGroup
	hb.Go(func() { rn.heartbeat(hbCtx, log, st, claimed) })
	out, panicked, err := rn.call(stepCtx, log, &Job{rec: rec, store: rn.cfg.Store})
	rn.setPhase(st, stepEnding)
	stopHB()
	hb.Wait()
	rn.storing <- struct{}{}
	defer func() { <-rn.storing }()
	free()

	cause := context.Cause(stepCtx)
	rn.mu.Lock()
	abandoned := rn.abandoned
	rn.mu.Unlock()
	switch {
	case abandoned:
		log.Warn("task runner: discarding outcome of a step that returned after Run gave up on it")
		return
	case errors.Is(cause, ErrLeaseLost):
		log.Warn("task runner: lease lost; discarding step outcome")
		return
	case errors.Is(cause, ErrShutdown):
		// Hand the step to the fleet at once rather than after the lease.
		rctx, cancel := context.WithTimeout(rn.base, 5*time.Second)
		err := rn.cfg.Store.Release(rctx, rec.ID, rec.Fence)
		cancel()
		if err != nil {
			log.Warn("task runner: step cut off by shutdown; releasing its lease failed, left leased for re-run", "err", err)
		} else {
			log.Info("task runner: step cut off by shutdown; lease released for re-run")
		}
		return
	}
	if !panicked && err != nil && errors.Is(err, ErrRequeue) {
		log.Warn("task runner: step cannot run here now; left leased for a later claim", "err", err)
		return
	}
	switch {
	case panicked:
		out = Fail(json.RawMessage(InternalErrorJSON))
	case err != nil && errors.Is(cause, ErrCancelRequested):
		out = Cancel()
	case err != nil:
		log.Error("task runner: handler failed", "err", err)
		out = Fail(json.RawMessage(InternalErrorJSON))
	}
	rn.finish(log, rec, out)
}

// call runs the handler, recovering a panic.
func (rn *run) call(ctx context.Context, log *slog.Logger, job *Job) (out Outcome, panicked bool, err error) {
	defer func() {
		if v := recover(); v != nil {
			log.Error("task runner: handler panicked", "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			panicked = true
		}
	}()
	out, err = rn.cfg.Handler(ctx, job)
	return out, false, err
}

// heartbeat renews the lease every Lease/3 from claimed, when the claim
// started (or at once when poked by a cancellation event), until ctx is
// done. It cancels the step with
// ErrCancelRequested when cancellation was requested, and with ErrLeaseLost
// when the lease is gone or could not be renewed for a whole lease period.
func (rn *run) heartbeat(ctx context.Context, log *slog.Logger, st *stepRun, claimed time.Time) {
	lease := rn.cfg.Lease
	every := max(lease/3, time.Millisecond)
	t := time.NewTimer(time.Until(claimed.Add(every)))
	defer t.Stop()
	lastOK := claimed
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			t.Reset(every)
		case <-st.poke:
		}
		rctx, cancel := context.WithTimeout(ctx, max(lease/3, time.Millisecond))
		cancelReq, err := rn.cfg.Store.Renew(rctx, st.rec.ID, st.rec.Fence, lease)
		cancel()
		switch {
		case errors.Is(err, ErrLeaseLost):
			st.cancel(ErrLeaseLost)
			return
		case err != nil:
			if ctx.Err() != nil {
				return
			}
			log.Warn("task runner: lease renewal failed", "err", err)
			if time.Since(lastOK) >= lease {
				st.cancel(ErrLeaseLost)
				return
			}
		default:
			lastOK = time.Now()
			if cancelReq {
				st.cancel(ErrCancelRequested)
			}
		}
	}
}

// finish records out, retrying transient store errors within one lease
// period. An outcome the store rejects as invalid (bad JSON, reused input
// key) is a handler bug: it is logged and the task fails instead.
func (rn *run) finish(log *slog.Logger, rec *Record, out Outcome) {
	ctx, cancel := context.WithTimeout(rn.base, rn.cfg.Lease)
	defer cancel()
	backoff := 50 * time.Millisecond
	replaced := false
	for {
		_, err := rn.cfg.Store.Finish(ctx, rec.ID, rec.Fence, out)
		switch {
		case err == nil:
			return
		case errors.Is(err, ErrLeaseLost):
			log.Warn("task runner: lease lost before the outcome was stored", "err", err)
			return
		case errors.Is(err, ErrInvalid) || errors.Is(err, ErrKeyReused):
			if replaced {
				log.Error("task runner: store rejected the internal-error outcome", "err", err)
				return
			}
			log.Error("task runner: handler returned an invalid outcome; failing task", "err", err)
			out, replaced = Fail(json.RawMessage(InternalErrorJSON)), true
			continue
		}
		log.Warn("task runner: storing step outcome failed; retrying", "err", err)
		select {
		case <-ctx.Done():
			log.Error("task runner: giving up storing step outcome; the step will be re-run after its lease expires", "err", err)
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, time.Second)
	}
}

// cancelAll cuts off every running step with ErrShutdown and returns how many
// there were.
func (rn *run) cancelAll() int {
	rn.mu.Lock()
	defer rn.mu.Unlock()
	rn.cutOff = true
	n := 0
	for _, st := range rn.steps {
		if st.cancel != nil { // not a step claimed ahead, being released
			st.cancel(ErrShutdown)
			n++
		}
	}
	return n
}
