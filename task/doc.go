// Package task is the durable-task layer behind the MCP tasks extension
// (io.modelcontextprotocol/tasks): storage, change notification and a worker
// pool that runs tasks as a series of re-entrant steps. It knows nothing of
// JSON-RPC; the server's protocol layer maps the extension's methods onto it.
// JSON payloads are opaque bytes, except input requests and responses, which
// are JSON objects keyed by input key.
//
// # Model
//
// A task runs in steps. The Handler is invoked with the task's stored
// parameters, its continuation state and the input responses received since
// the previous step, and returns an Outcome: Complete(result), Fail(error
// object), Cancel(), or NeedInput(requests keyed by fresh input keys, new
// state). While a task waits for input no goroutine is held: it sits in the
// Store until every outstanding request is answered, then any worker of any
// instance claims it and runs the next step.
//
// # State machine
//
//	Create ─► working (queued) ──Claim──► working (running: leased, fenced)
//	            ▲     ▲                       │          │
//	            │     └──── lease lapses ─────┘          │ Finish
//	            │                                        ├─► completed | failed | cancelled
//	            │                                        └─► input_required (NeedInput)
//	            │                                                  │
//	            └──────── SubmitInput answers the last key ────────┘
//
// "running" is status Working with a live lease; clients see "working". Other
// transitions: RequestCancel moves a task that is not running (queued, waiting
// for input, or with a lapsed lease) straight to cancelled, and only flags a
// running one (CancelRequested): its handler's context is cancelled and the
// task ends cancelled unless the step completed or failed anyway. A task whose
// TTL elapsed before it became terminal is moved to failed by ExpireAndPurge
// (error ExpiredErrorJSON by default), and terminal tasks are deleted once
// the retention has passed since the later of their terminal transition and
// their expiry. Terminal tasks never change again.
//
// Input keys are unique over a task's whole life: Finish rejects an
// InputRequired outcome that reuses any key ever issued (ErrKeyReused).
// SubmitInput accepts responses only for currently outstanding keys and
// silently ignores all others (never issued, already answered, superseded);
// the first answer to a key wins, so resubmission is idempotent, and partial
// answers leave the task in input_required with the remaining requests. The
// record's InputRequests always holds exactly the outstanding requests, which
// is what tasks/get must return.
//
// # Leases and fencing
//
// Claim atomically picks up to a given number of claimable tasks (Working,
// no live lease, not expired; fairly across partitions, oldest first within
// each: see Fairness), records the worker and a lease
// expiry on each, and increments each task's fence. The fence is a fencing token: every later write by that worker
// (Renew, SetStatusMessage, Finish) carries it and fails with ErrLeaseLost if
// the task was re-claimed, cancelled, expired or finished in between.
// Transitions that revoke a lease (cancelling an unleased task, expiry)
// increment the fence too. The Runner heartbeats every Lease/3, counted from
// the claim; if a worker dies, its lease lapses and another worker (of this
// or another process) re-claims the task with a higher fence and re-runs the
// step. While its steps are short a Runner claims some ahead of its free
// workers; a step claimed ahead that finds no worker within PollInterval
// (and Lease/3 of its claim), or that is still waiting when the Runner
// stops, is handed back (Store.Unclaim, its attempt taken back) for any
// worker to claim at once, not
// run late. Execution is
// therefore at least once per step: Job.IdempotencyKey ("<task ID>/<step>")
// is stable across re-runs of a step so handlers can deduplicate side
// effects, and Job.Fence can be passed to fenced external systems.
//
// # Fairness
//
// Many tenants share one store and its runners, so no tenant's backlog may
// delay another's tasks. Store.Create refuses (ErrLimit) a task past the
// creator's Quota of live tasks, per owner and per partition. Store.Claim
// serves the partitions round-robin (ClaimOptions): every partition with
// claimable tasks gives one before any gives a second, and a Runner carries
// the cursor from claim to claim, so a new tenant's first task is claimed
// in the next claim however long another tenant's queue is. A Runner runs
// at most MaxPartitionWorkers steps of one partition at once (by default
// all its workers but a quarter), and does not claim from a partition that
// holds its bound, so one tenant's slow steps leave workers for the others.
// The PostgreSQL store's claims are fair across the instances sharing it:
// each instance's runner cycles through every partition.
//
// # Notifications
//
// Every Store is a Bus. After each durable change a store publishes the task
// ID on ChannelChanged (client-visible change: drive notifications/tasks by
// re-reading the task with Get), ChannelRunnable (the task became claimable:
// wakes runners) and ChannelCancel (cancellation requested for a running
// task: lets its runner react before the next heartbeat). Delivery is best
// effort; treat events as hints. The memory and SQLite stores fan out within
// the process; the PostgreSQL store uses LISTEN/NOTIFY so all instances hear
// all events, and Publish/Subscribe can carry the server's own events too.
//
// # Stores
//
// MemoryStore (this package) keeps tasks in memory. Package sqlitestore
// stores them in a SQLite file (no cgo; several processes may share the
// file), package pgstore in PostgreSQL. All implement the rules through the
// Record.Apply* methods, so they behave identically; package storetest is the
// conformance suite each of them passes.
//
// # Integration
//
// A protocol layer typically:
//
//   - on a tools/call it turns into a task: Create (durable on return), then
//     answer resultType "task" from the returned Record;
//   - tasks/get: Get, authorize against Record.Owner, render the record
//     (status-specific fields: InputRequests, Result, Error; TTL → ttlMs,
//     PollInterval → pollIntervalMs, UpdatedAt → lastUpdatedAt);
//   - tasks/update: Get + authorize, then SubmitInput(inputResponses);
//   - tasks/cancel: Get + authorize, then RequestCancel;
//   - notifications/tasks: Subscribe(ChannelChanged), Get each ID, send;
//   - runs a Runner (any number, on any instance) with a Handler that
//     dispatches on Job.Operation.
//
// ErrNotFound maps to JSON-RPC -32602, ErrInvalid from SubmitInput to -32602.
// Handler errors and panics never reach clients: the task fails with the
// fixed InternalErrorJSON and the details are logged.
package task
