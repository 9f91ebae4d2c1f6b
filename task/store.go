package task

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Bus channels on which every Store publishes task IDs (the payload is the
// task ID). Delivery is best effort: treat an event as a hint and re-read the
// task with Get.
const (
	// ChannelChanged carries the ID of a task whose client-visible state
	// (status, status message, input requests, result, error) changed,
	// including creation. The framework turns these into notifications/tasks.
	ChannelChanged = "weft.task.changed"
	// ChannelRunnable carries the ID of a task that became claimable
	// (created, or all its input arrived). Runners use it to wake up.
	ChannelRunnable = "weft.task.runnable"
	// ChannelCancel carries the ID of a running (leased) task whose
	// cancellation was requested. Runners use it to cancel the step promptly.
	ChannelCancel = "weft.task.cancel"
)

// MaxChannelLen is the longest channel name a Bus accepts.
const MaxChannelLen = 128

// Bus is a small publish/subscribe interface for change notifications and
// generic server events. Every Store is a Bus: the memory and SQLite stores
// fan out within the process (other processes sharing a SQLite file hear
// nothing and rely on polling); the PostgreSQL store uses LISTEN/NOTIFY, so
// every instance on the same database and table prefix hears every event.
//
// Delivery is at most once and best effort: events published while a
// subscriber's buffer is full, or while a PostgreSQL listener reconnects, are
// dropped. Consumers must treat events as hints and fall back to polling.
type Bus interface {
	// Publish sends payload to every current subscriber of channel. Channel
	// names are 1..MaxChannelLen bytes without NUL or newline; a store may
	// also limit the payload size (pgstore: pgstore.MaxPayload bytes).
	Publish(ctx context.Context, channel, payload string) error
	// Subscribe returns a buffered channel of the payloads published on
	// channel from now on. The returned channel is closed when ctx is done or
	// the bus is closed; a subscriber that falls behind loses events.
	Subscribe(ctx context.Context, channel string) (<-chan string, error)
}

// Store persists tasks and arbitrates which worker runs them. All methods are
// safe for concurrent use (by goroutines, and for the SQLite and PostgreSQL
// stores by processes sharing the database). Each method is atomic: it
// applies entirely or not at all, on one task, under that task's lock (a
// mutex, a SQLite write transaction, a PostgreSQL row lock), using the
// Record.Apply* rules. Records returned are private copies. Every state change
// is published on the Bus after it is durable (NotifyChannels).
//
// Fenced methods (Renew, Finish, SetStatusMessage) take the fence returned by
// Claim and fail with ErrLeaseLost when the task was re-claimed, finished,
// cancelled or expired since; a lease that lapsed but that nobody re-claimed
// still holds, which fencing makes safe.
type Store interface {
	Bus

	// Create durably stores a new Working task (see NewRecord) and returns
	// it; once Create returns, Get finds it. ErrExists if the ID is taken.
	Create(ctx context.Context, spec NewTask) (*Record, error)
	// Get returns the task with the given ID, or ErrNotFound.
	Get(ctx context.Context, id string) (*Record, error)
	// Claim atomically picks up to max claimable tasks (Record.Claimable:
	// Working, no live lease, not expired), leases each to worker until
	// now+lease, increments its fence and attempts, and returns them; none
	// when nothing is claimable. Claimable tasks whose cancellation was
	// requested are moved to Cancelled on the way. ErrInvalid for an empty
	// worker, a non-positive lease or max < 1.
	//
	// Claims are fair across partitions (Owner.Partition): the partitions
	// with claimable tasks, but those in opts.Exclude, are visited in key
	// order starting after opts.After (wrapping around), and each gives
	// its oldest claimable task before any gives a second (the memory and
	// SQLite stores continue round by round; pgstore takes an equal share
	// of max from each partition of up to max partitions, and selects
	// again while some partition filled its share). Tasks are returned in
	// that order: the first of each partition, then the second, ... A
	// caller that passes as After the partition whose first task came last
	// in its previous claim cycles through all partitions, so one
	// partition's backlog never delays another partition's first task.
	Claim(ctx context.Context, worker string, lease time.Duration, max int, opts ...ClaimOptions) ([]*Record, error)
	// Renew atomically extends the lease identified by fence to now+lease
	// and reports whether cancellation was requested (ErrLeaseLost if the
	// lease is no longer held).
	Renew(ctx context.Context, id string, fence int64, lease time.Duration) (cancelRequested bool, err error)
	// Release atomically gives up the lease identified by fence without
	// ending the step (Record.ApplyRelease): the task is claimable at once
	// and ChannelRunnable is published. ErrLeaseLost for a stale fence.
	Release(ctx context.Context, id string, fence int64) error
	// Unclaim atomically gives up the lease identified by fence of a step
	// its worker never started (Record.ApplyUnclaim): as Release, and the
	// attempt the claim counted is taken back. ErrLeaseLost for a stale
	// fence.
	Unclaim(ctx context.Context, id string, fence int64) error
	// Finish atomically ends the current step with out and releases the
	// lease (Record.ApplyFinish). ErrKeyReused if an InputRequired outcome
	// reuses a key, ErrInvalid for a malformed outcome, ErrLeaseLost for a
	// stale fence; nothing changes on error.
	Finish(ctx context.Context, id string, fence int64, out Outcome) (*Record, error)
	// SetStatusMessage atomically sets the status message under the lease
	// identified by fence (progress reporting).
	SetStatusMessage(ctx context.Context, id string, fence int64, msg string) error
	// SubmitInput atomically records responses (a JSON object keyed by input
	// key) for currently outstanding keys, ignoring all others; when nothing
	// remains outstanding the task becomes Working and claimable
	// (Record.ApplyInput). It reports whether anything changed; it is
	// idempotent. ErrNotFound for an unknown task, ErrInvalid if responses is
	// not a JSON object.
	SubmitInput(ctx context.Context, id string, responses json.RawMessage) (changed bool, err error)
	// RequestCancel atomically records a cancellation request
	// (Record.ApplyCancel): an unleased task becomes Cancelled at once, a
	// running one has CancelRequested set, a terminal one is unchanged. It
	// returns the resulting record.
	RequestCancel(ctx context.Context, id string) (*Record, error)
	// ExpireAndPurge moves every non-terminal task whose TTL elapsed at now
	// to Failed (Record.ApplyExpiry; each task atomically on its own), then
	// deletes terminal tasks that are Purgeable at now. Safe to run
	// concurrently from several instances.
	ExpireAndPurge(ctx context.Context, now time.Time, opts SweepOptions) (SweepResult, error)
	// Close releases the store's resources and closes its subscriptions.
	// Methods called after Close fail with ErrClosed.
	Close() error
}

// ClaimOptions steer which partitions a Claim serves (only the first
// ClaimOptions passed counts).
type ClaimOptions struct {
	// After is the partition the caller's previous claim served last: this
	// claim visits the partitions in key order starting after it, wrapping
	// around, so that a caller's consecutive claims cycle through every
	// partition with claimable tasks.
	After string
	// Exclude lists partitions not to claim from (those the caller already
	// runs as many steps of as it allows).
	Exclude []string
}

// Quota bounds the live (non-terminal: working or input_required) tasks
// that Store.Create admits; 0 means no bound.
type Quota struct {
	// PerOwner bounds the live tasks of one Owner (a principal within its
	// partition).
	PerOwner int
	// PerPartition bounds the live tasks of one partition, all principals
	// together.
	PerPartition int
}

// Admit reports (ErrLimit) whether a task may be created by an owner that
// has owner live tasks, in a partition that has partition live tasks.
// Stores call it from Create with the counts they read.
func (q Quota) Admit(owner, partition int) error {
	if q.PerOwner > 0 && owner >= q.PerOwner {
		return fmt.Errorf("%d live tasks of this principal (quota %d): %w", owner, q.PerOwner, ErrLimit)
	}
	if q.PerPartition > 0 && partition >= q.PerPartition {
		return fmt.Errorf("%d live tasks in this partition (quota %d): %w", partition, q.PerPartition, ErrLimit)
	}
	return nil
}

// RoundRobin sorts partitions in place into the order a claim serves them:
// key order, starting with the first key after after and wrapping around
// (after itself, if present, comes last). It returns partitions.
func RoundRobin(partitions []string, after string) []string {
	slices.Sort(partitions)
	i, _ := slices.BinarySearch(partitions, after)
	if i < len(partitions) && partitions[i] == after {
		i++
	}
	rotated := append(slices.Clone(partitions[i:]), partitions[:i]...)
	copy(partitions, rotated)
	return partitions
}

// SweepOptions configures Store.ExpireAndPurge.
type SweepOptions struct {
	// Retention is how long a terminal task is kept after the later of its
	// terminal transition and its expiry time. Negative means 0.
	Retention time.Duration
	// ExpiredError is the JSON-RPC error object stored on expired tasks;
	// empty means ExpiredErrorJSON.
	ExpiredError json.RawMessage
	// ExpiredMessage is the status message of expired tasks; empty means
	// ExpiredMessage.
	ExpiredMessage string
	// Limit caps how many tasks are expired and how many purged in one call;
	// 0 means 1000.
	Limit int
}

// Normalize returns o with defaults filled in, or ErrInvalid if ExpiredError
// is not a JSON object. Stores call it at the start of ExpireAndPurge.
func (o SweepOptions) Normalize() (SweepOptions, error) {
	if len(o.ExpiredError) == 0 {
		o.ExpiredError = json.RawMessage(ExpiredErrorJSON)
	}
	if err := checkJSON("expired error", o.ExpiredError, true); err != nil {
		return o, fmt.Errorf("task: sweep options: %w", err)
	}
	if o.ExpiredMessage == "" {
		o.ExpiredMessage = ExpiredMessage
	}
	if o.Limit <= 0 {
		o.Limit = 1000
	}
	o.Retention = max(o.Retention, 0)
	return o, nil
}

// SweepResult reports what ExpireAndPurge did.
type SweepResult struct {
	// Expired counts tasks moved to Failed because their TTL elapsed.
	Expired int
	// Purged counts deleted terminal tasks.
	Purged int
}

// ValidateChannel reports whether name is an acceptable Bus channel name.
func ValidateChannel(name string) error {
	if name == "" || len(name) > MaxChannelLen || strings.ContainsAny(name, "\x00\n") {
		return fmt.Errorf("task: bus channel %q: must be 1..%d bytes without NUL or newline: %w",
			name, MaxChannelLen, ErrInvalid)
	}
	return nil
}
