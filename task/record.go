package task

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"
)

// Owner identifies who created a task. Stores keep it verbatim; the framework
// authorizes every tasks/get, tasks/update and tasks/cancel request against it.
type Owner struct {
	// Principal is the authenticated identity of the creator.
	Principal string
	// Partition is an optional tenant or session partition of the creator.
	Partition string
}

// Record is the stored state of one task. Records returned by a Store are
// private copies: changing them does not change the store.
//
// JSON payloads are opaque to the store, except InputRequests and
// InputResponses, which are JSON objects keyed by input key. A nil payload
// means "absent".
type Record struct {
	// ID is the unguessable task ID (see NewID).
	ID string
	// Owner is the creator's identity.
	Owner Owner
	// Operation names what the task runs (the tool name for tools/call).
	Operation string
	// Params are the stored request parameters the handler runs with.
	Params json.RawMessage

	// Status is the current lifecycle state.
	Status Status
	// StatusMessage is an optional human-readable description of the state
	// (progress while working).
	StatusMessage string
	// CreatedAt is when the task was created.
	CreatedAt time.Time
	// UpdatedAt is when the client-visible state last changed (lastUpdatedAt
	// on the wire). Lease bookkeeping does not change it.
	UpdatedAt time.Time
	// TTL is the lifetime from creation; 0 means unlimited.
	TTL time.Duration
	// PollInterval is the suggested client polling interval; 0 means unset.
	PollInterval time.Duration
	// ExpiresAt is CreatedAt+TTL, or the zero time when TTL is 0.
	ExpiresAt time.Time

	// InputRequests is a JSON object of the OUTSTANDING input requests, keyed
	// by input key; nil when none are outstanding. Answered requests are
	// removed from it.
	InputRequests json.RawMessage
	// InputResponses is a JSON object of the responses received for the
	// current step, keyed by input key; nil when none.
	InputResponses json.RawMessage
	// IssuedKeys lists every input key ever issued for this task, in issue
	// order. A key is never issued twice.
	IssuedKeys []string
	// State is the handler's continuation state for the next step.
	State json.RawMessage
	// Result is the final result (Completed only).
	Result json.RawMessage
	// Error is the JSON-RPC error object (Failed only).
	Error json.RawMessage

	// CancelRequested records that tasks/cancel was received.
	CancelRequested bool
	// Step is the 1-based number of the step to run next (or running now).
	// It advances each time the task enters InputRequired.
	Step int
	// Attempts counts how many times the current step has been claimed.
	Attempts int
	// LeaseOwner names the worker holding the lease; empty when unleased.
	LeaseOwner string
	// LeaseExpiresAt is when the lease lapses; zero when unleased.
	LeaseExpiresAt time.Time
	// Fence is the fencing token: it increases with every claim and with
	// every transition that revokes a lease. Fenced writes carry the fence
	// they were granted and fail with ErrLeaseLost when it is stale.
	Fence int64
}

// NewTask describes a task to create.
type NewTask struct {
	// ID is the task ID; when empty, Create generates one with NewID.
	ID string
	// Owner is the creator's identity.
	Owner Owner
	// Operation names what the task runs; required.
	Operation string
	// Params are the request parameters (any JSON value, or nil).
	Params json.RawMessage
	// TTL is the lifetime from creation; 0 means unlimited.
	TTL time.Duration
	// PollInterval is the suggested client polling interval.
	PollInterval time.Duration
	// StatusMessage is the initial status message (optional).
	StatusMessage string
	// State is the initial continuation state for step 1 (optional).
	State json.RawMessage
	// Quota bounds the live tasks of the creator: Create fails with
	// ErrLimit rather than exceed it. It is not stored.
	Quota Quota
}

// NewRecord validates spec and returns the initial record of a task created at
// now: status Working, Step 1, unleased, fence 0. It generates an ID when
// spec.ID is empty. Store implementations call it from Create.
func NewRecord(spec NewTask, now time.Time) (*Record, error) {
	if spec.Operation == "" {
		return nil, fmt.Errorf("task: create: empty operation: %w", ErrInvalid)
	}
	if spec.TTL < 0 || spec.PollInterval < 0 {
		return nil, fmt.Errorf("task: create: negative ttl or poll interval: %w", ErrInvalid)
	}
	if err := checkJSON("params", spec.Params, false); err != nil {
		return nil, fmt.Errorf("task: create: %w", err)
	}
	if err := checkJSON("state", spec.State, false); err != nil {
		return nil, fmt.Errorf("task: create: %w", err)
	}
	id := spec.ID
	if id == "" {
		var err error
		if id, err = NewID(); err != nil {
			return nil, err
		}
	}
	r := &Record{
		ID:            id,
		Owner:         spec.Owner,
		Operation:     spec.Operation,
		Params:        clone(spec.Params),
		Status:        Working,
		StatusMessage: spec.StatusMessage,
		CreatedAt:     now,
		UpdatedAt:     now,
		TTL:           spec.TTL,
		PollInterval:  spec.PollInterval,
		State:         clone(spec.State),
		Step:          1,
	}
	if spec.TTL > 0 {
		r.ExpiresAt = now.Add(spec.TTL)
	}
	return r, nil
}

// Clone returns a deep copy of r.
func (r *Record) Clone() *Record {
	if r == nil {
		return nil
	}
	c := *r
	c.Params = clone(r.Params)
	c.InputRequests = clone(r.InputRequests)
	c.InputResponses = clone(r.InputResponses)
	c.IssuedKeys = slices.Clone(r.IssuedKeys)
	c.State = clone(r.State)
	c.Result = clone(r.Result)
	c.Error = clone(r.Error)
	return &c
}

// Leased reports whether a lease on r is held at now.
func (r *Record) Leased(now time.Time) bool {
	return r.LeaseOwner != "" && now.Before(r.LeaseExpiresAt)
}

// Expired reports whether r has a TTL that has elapsed at now.
func (r *Record) Expired(now time.Time) bool {
	return !r.ExpiresAt.IsZero() && !now.Before(r.ExpiresAt)
}

// Claimable reports whether a worker may claim r at now: status Working (so
// no input is outstanding), no live lease, and not expired. SQL stores
// express the same predicate in their claim query.
func (r *Record) Claimable(now time.Time) bool {
	return r.Status == Working && !r.Leased(now) && !r.Expired(now)
}

// Purgeable reports whether r may be deleted at now under the given
// retention: r is terminal and retention has passed since the later of its
// last update (its terminal transition) and its expiry time.
func (r *Record) Purgeable(now time.Time, retention time.Duration) bool {
	if !r.Status.IsTerminal() {
		return false
	}
	base := r.UpdatedAt
	if r.ExpiresAt.After(base) {
		base = r.ExpiresAt
	}
	return !now.Before(base.Add(max(retention, 0)))
}

func clone(b json.RawMessage) json.RawMessage {
	if b == nil {
		return nil
	}
	return slices.Clone(b)
}
