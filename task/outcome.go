package task

import (
	"encoding/json"
	"errors"
)

// Errors returned by stores and the runner. Stores wrap them with context;
// test with errors.Is.
var (
	// ErrNotFound: no task has the given ID (it never existed or was purged).
	ErrNotFound = errors.New("task: not found")
	// ErrExists: Create was given an ID that is already taken.
	ErrExists = errors.New("task: id already exists")
	// ErrLeaseLost: a fenced write carried a stale fence, or the task is no
	// longer held by that lease (finished, cancelled, expired or re-claimed).
	ErrLeaseLost = errors.New("task: lease lost")
	// ErrKeyReused: an InputRequired outcome used an input key that was
	// already issued earlier in the task's life.
	ErrKeyReused = errors.New("task: input key already issued")
	// ErrInvalid: an argument is malformed (bad JSON, empty operation,
	// unsupported outcome status, ...).
	ErrInvalid = errors.New("task: invalid argument")
	// ErrLimit: Create would exceed the creator's Quota of live tasks.
	ErrLimit = errors.New("task: too many live tasks")
	// ErrClosed: the store has been closed.
	ErrClosed = errors.New("task: store closed")
	// ErrCancelRequested is the context cause given to a running handler
	// when the client requested cancellation (see context.Cause).
	ErrCancelRequested = errors.New("task: cancellation requested")
	// ErrShutdown is the context cause given to a running handler that the
	// Runner cut off while shutting down; its step stays leased and is
	// re-run elsewhere after the lease expires.
	ErrShutdown = errors.New("task: runner shutting down")
	// ErrRequeue is returned (wrapped) by a Handler that cannot run the step
	// on this instance now (for example its operation is not registered
	// yet while the server starts): the step stays leased and is claimed
	// again, here or elsewhere, after the lease expires. Nothing is failed.
	ErrRequeue = errors.New("task: step cannot run here now")
)

// JSON-RPC error objects used by this package.
const (
	// InternalErrorJSON is stored as the error of a step whose handler
	// returned a Go error or panicked. Details are logged, never exposed.
	InternalErrorJSON = `{"code":-32603,"message":"Internal error"}`
	// ExpiredErrorJSON is the default error stored when a task's TTL
	// elapses before it reached a terminal status.
	ExpiredErrorJSON = `{"code":-32603,"message":"Task expired"}`
	// ExpiredMessage is the default status message of an expired task.
	ExpiredMessage = "Task expired"
)

// Outcome is what a step produced. Build one with Complete, Fail, NeedInput
// or Cancel; StatusMessage may be set on any of them.
type Outcome struct {
	// Status is Completed, Failed, InputRequired or Cancelled.
	Status Status
	// Result is the final result, a JSON object (Completed).
	Result json.RawMessage
	// Error is a JSON-RPC error object (Failed).
	Error json.RawMessage
	// InputRequests is a non-empty JSON object of new input requests keyed
	// by fresh input keys (InputRequired).
	InputRequests json.RawMessage
	// State is the continuation state handed to the next step
	// (InputRequired; ignored otherwise).
	State json.RawMessage
	// StatusMessage replaces the task's status message; empty clears it.
	StatusMessage string
}

// Complete returns a Completed outcome with the given result object.
func Complete(result json.RawMessage) Outcome {
	return Outcome{Status: Completed, Result: result}
}

// Fail returns a Failed outcome with the given JSON-RPC error object.
func Fail(rpcError json.RawMessage) Outcome {
	return Outcome{Status: Failed, Error: rpcError}
}

// NeedInput returns an InputRequired outcome: requests is a JSON object of
// input requests keyed by keys never issued before for this task, and state
// is the continuation state for the next step.
func NeedInput(requests, state json.RawMessage) Outcome {
	return Outcome{Status: InputRequired, InputRequests: requests, State: state}
}

// Cancel returns a Cancelled outcome. Handlers return it (or simply return
// their context's error) after noticing ErrCancelRequested.
func Cancel() Outcome {
	return Outcome{Status: Cancelled}
}
