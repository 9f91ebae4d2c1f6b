package task

// Status is the lifecycle state of a task. The values are the wire values of
// the MCP tasks extension.
type Status string

// Task statuses.
const (
	// Working: the task is queued or a step is running.
	Working Status = "working"
	// InputRequired: the task waits for the client to answer the outstanding
	// Record.InputRequests through tasks/update.
	InputRequired Status = "input_required"
	// Completed: terminal; Record.Result holds the result.
	Completed Status = "completed"
	// Failed: terminal; Record.Error holds a JSON-RPC error object.
	Failed Status = "failed"
	// Cancelled: terminal; the task was cancelled at the client's request.
	Cancelled Status = "cancelled"
)

// IsTerminal reports whether s is Completed, Failed or Cancelled. A terminal
// task never changes again (until it is purged).
func (s Status) IsTerminal() bool {
	return s == Completed || s == Failed || s == Cancelled
}

// Valid reports whether s is one of the five defined statuses.
func (s Status) Valid() bool {
	switch s {
	case Working, InputRequired, Completed, Failed, Cancelled:
		return true
	}
	return false
}
