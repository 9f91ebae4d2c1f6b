package task

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"time"
)

// The Apply methods implement the task state machine on an in-memory record.
// Every Store loads the record under a lock (a mutex, a SQLite write
// transaction, a PostgreSQL row lock), calls one Apply method, and writes the
// record back when it reports a change. Keeping the rules here keeps every
// store's semantics identical; the storetest suite checks them.

// ApplyClaim grants a lease on a claimable record to worker until now+lease,
// increments Fence and Attempts, and reports claimed=true. A claimable record
// whose cancellation was requested (its previous holder died) is moved to
// Cancelled instead (claimed=false, changed=true). A record that is not
// claimable at now is left alone.
func (r *Record) ApplyClaim(worker string, now time.Time, lease time.Duration) (claimed, changed bool) {
	if !r.Claimable(now) {
		return false, false
	}
	if r.CancelRequested {
		r.toTerminal(Cancelled, now)
		r.Fence++
		return false, true
	}
	r.LeaseOwner = worker
	r.LeaseExpiresAt = now.Add(lease)
	r.Fence++
	r.Attempts++
	return true, true
}

// held reports whether the lease identified by fence still holds r. A lease
// that has lapsed but that nobody has re-claimed still holds: fencing makes
// such a late write safe.
func (r *Record) held(fence int64) bool {
	return r.Status == Working && r.LeaseOwner != "" && r.Fence == fence
}

// ApplyRenew extends the lease identified by fence to now+lease and reports
// whether cancellation was requested. It fails with ErrLeaseLost when the
// fence is stale or the task is no longer held.
func (r *Record) ApplyRenew(fence int64, now time.Time, lease time.Duration) (cancelRequested bool, err error) {
	if !r.held(fence) {
		return false, fmt.Errorf("task %s: renew with fence %d: %w", r.ID, fence, ErrLeaseLost)
	}
	r.LeaseExpiresAt = now.Add(lease)
	return r.CancelRequested, nil
}

// ApplyRelease gives up the lease identified by fence without ending the
// step (ErrLeaseLost when it is not held): the task is claimable again at
// once, by any worker. A runner that shuts down hands its cut-off steps to
// the rest of the fleet this way instead of leaving them leased.
func (r *Record) ApplyRelease(fence int64) error {
	if !r.held(fence) {
		return fmt.Errorf("task %s: release with fence %d: %w", r.ID, fence, ErrLeaseLost)
	}
	r.LeaseOwner = ""
	r.LeaseExpiresAt = time.Time{}
	return nil
}

// ApplyUnclaim gives up the lease identified by fence of a step that never
// started (ErrLeaseLost when it is not held): as ApplyRelease, and the
// attempt its claim counted is taken back, so that a step claimed and handed
// back unrun does not count against a runner's MaxAttempts. The fence stays
// where the claim put it: fences only grow.
func (r *Record) ApplyUnclaim(fence int64) error {
	if err := r.ApplyRelease(fence); err != nil {
		return fmt.Errorf("task %s: unclaim with fence %d: %w", r.ID, fence, ErrLeaseLost)
	}
	if r.Attempts > 0 {
		r.Attempts--
	}
	return nil
}

// ApplyStatusMessage sets the status message under the lease identified by
// fence (ErrLeaseLost otherwise).
func (r *Record) ApplyStatusMessage(fence int64, msg string, now time.Time) error {
	if !r.held(fence) {
		return fmt.Errorf("task %s: set status message with fence %d: %w", r.ID, fence, ErrLeaseLost)
	}
	r.StatusMessage = msg
	r.UpdatedAt = now
	return nil
}

// ApplyFinish ends the current step under the lease identified by fence and
// releases the lease:
//
//   - Completed, Failed, Cancelled: the task becomes terminal; outstanding
//     input, received responses and continuation state are dropped.
//   - InputRequired: the new requests become the outstanding ones, their keys
//     are appended to IssuedKeys (ErrKeyReused if any was issued before), the
//     continuation state is stored, received responses are cleared, Step
//     advances and Attempts resets. If cancellation was requested meanwhile,
//     the task becomes Cancelled instead.
//
// It fails with ErrLeaseLost for a stale fence and ErrInvalid for a malformed
// outcome; r is unchanged on error.
func (r *Record) ApplyFinish(fence int64, out Outcome, now time.Time) error {
	if !r.held(fence) {
		return fmt.Errorf("task %s: finish with fence %d: %w", r.ID, fence, ErrLeaseLost)
	}
	switch out.Status {
	case Completed:
		if err := checkJSON("result", out.Result, true); err != nil {
			return fmt.Errorf("task %s: finish: %w", r.ID, err)
		}
	case Failed:
		if err := checkJSON("error", out.Error, true); err != nil {
			return fmt.Errorf("task %s: finish: %w", r.ID, err)
		}
	case Cancelled:
	case InputRequired:
		keys, err := objectKeys("input requests", out.InputRequests)
		if err != nil {
			return fmt.Errorf("task %s: finish: %w", r.ID, err)
		}
		if len(keys) == 0 {
			return fmt.Errorf("task %s: finish: input_required without input requests: %w", r.ID, ErrInvalid)
		}
		if err := checkJSON("state", out.State, false); err != nil {
			return fmt.Errorf("task %s: finish: %w", r.ID, err)
		}
		for _, k := range keys {
			if k == "" {
				return fmt.Errorf("task %s: finish: empty input key: %w", r.ID, ErrInvalid)
			}
			if slices.Contains(r.IssuedKeys, k) {
				return fmt.Errorf("task %s: finish: input key %q: %w", r.ID, k, ErrKeyReused)
			}
		}
		if r.CancelRequested {
			r.toTerminal(Cancelled, now)
			r.StatusMessage = out.StatusMessage
			return nil
		}
		r.Status = InputRequired
		r.StatusMessage = out.StatusMessage
		r.InputRequests = clone(out.InputRequests)
		r.InputResponses = nil
		r.IssuedKeys = append(r.IssuedKeys, keys...)
		r.State = clone(out.State)
		r.Step++
		r.Attempts = 0
		r.LeaseOwner, r.LeaseExpiresAt = "", time.Time{}
		r.UpdatedAt = now
		return nil
	default:
		return fmt.Errorf("task %s: finish with status %q: %w", r.ID, out.Status, ErrInvalid)
	}
	r.toTerminal(out.Status, now)
	r.StatusMessage = out.StatusMessage
	r.Result = clone(out.Result)
	r.Error = clone(out.Error)
	return nil
}

// ApplyInput records responses (a JSON object keyed by input key) for the
// keys that are currently outstanding and ignores every other key (never
// issued, already answered, superseded); the first answer to a key wins, so
// resubmission is idempotent. When no request remains outstanding the task
// becomes Working and therefore claimable, and its (input-related) status
// message is cleared. changed reports whether any
// response was accepted. It fails with ErrInvalid when responses is not a JSON
// object.
func (r *Record) ApplyInput(responses json.RawMessage, now time.Time) (changed bool, err error) {
	var in map[string]json.RawMessage
	if err := decodeObject("input responses", responses, &in); err != nil {
		return false, fmt.Errorf("task %s: submit input: %w", r.ID, err)
	}
	if r.Status != InputRequired || len(in) == 0 {
		return false, nil
	}
	var outstanding, received map[string]json.RawMessage
	if err := decodeObject("stored input requests", r.InputRequests, &outstanding); err != nil {
		return false, fmt.Errorf("task %s: submit input: %w", r.ID, err)
	}
	if len(r.InputResponses) > 0 {
		if err := decodeObject("stored input responses", r.InputResponses, &received); err != nil {
			return false, fmt.Errorf("task %s: submit input: %w", r.ID, err)
		}
	}
	if received == nil {
		received = make(map[string]json.RawMessage, len(in))
	}
	for k, v := range in {
		if _, ok := outstanding[k]; !ok {
			continue
		}
		delete(outstanding, k)
		received[k] = v
		changed = true
	}
	if !changed {
		return false, nil
	}
	resp, err := json.Marshal(received)
	if err != nil {
		return false, fmt.Errorf("task %s: encode input responses: %w", r.ID, err)
	}
	r.InputResponses = resp
	if len(outstanding) == 0 {
		r.InputRequests = nil
		r.Status = Working
		r.StatusMessage = ""
	} else {
		req, err := json.Marshal(outstanding)
		if err != nil {
			return false, fmt.Errorf("task %s: encode input requests: %w", r.ID, err)
		}
		r.InputRequests = req
	}
	r.UpdatedAt = now
	return true, nil
}

// ApplyCancel records a cancellation request. A terminal task is left alone
// (changed=false). A task under a live lease only gets CancelRequested set;
// its runner notices on its next heartbeat. Any other task (queued, waiting
// for input, or under a lapsed lease) becomes Cancelled at once and its fence
// is bumped so a lapsed holder can no longer write.
func (r *Record) ApplyCancel(now time.Time) (changed bool) {
	if r.Status.IsTerminal() {
		return false
	}
	if r.Status == Working && r.Leased(now) {
		if r.CancelRequested {
			return false
		}
		r.CancelRequested = true
		return true
	}
	r.CancelRequested = true
	r.toTerminal(Cancelled, now)
	r.StatusMessage = ""
	r.Fence++
	return true
}

// ApplyExpiry moves a non-terminal record whose TTL has elapsed at now to
// Failed with the given error object and status message, revoking any lease
// (the fence is bumped). It reports whether r changed.
func (r *Record) ApplyExpiry(now time.Time, rpcError json.RawMessage, msg string) (changed bool) {
	if r.Status.IsTerminal() || !r.Expired(now) {
		return false
	}
	r.toTerminal(Failed, now)
	r.Error = clone(rpcError)
	r.StatusMessage = msg
	r.Fence++
	return true
}

// toTerminal moves r to a terminal status, releasing the lease and dropping
// per-step data (which may hold user input) that is of no further use.
func (r *Record) toTerminal(s Status, now time.Time) {
	r.Status = s
	r.InputRequests = nil
	r.InputResponses = nil
	r.State = nil
	r.LeaseOwner, r.LeaseExpiresAt = "", time.Time{}
	r.UpdatedAt = now
}

// NotifyChannels returns the Bus channels a store publishes r's ID on after
// the change from before to after (before is nil for a newly created task):
// ChannelChanged when client-visible state changed, ChannelRunnable when the
// task became claimable, ChannelCancel when cancellation was requested for a
// running task.
func NotifyChannels(before, after *Record) []string {
	var chans []string
	if before == nil || visibleChange(before, after) {
		chans = append(chans, ChannelChanged)
	}
	if after.Status == Working && after.LeaseOwner == "" && (before == nil || before.Status != Working || before.LeaseOwner != "") {
		chans = append(chans, ChannelRunnable)
	}
	if before != nil && !before.CancelRequested && after.CancelRequested && after.Status == Working {
		chans = append(chans, ChannelCancel)
	}
	return chans
}

func visibleChange(a, b *Record) bool {
	return a.Status != b.Status || a.StatusMessage != b.StatusMessage ||
		!a.UpdatedAt.Equal(b.UpdatedAt) || a.TTL != b.TTL || a.PollInterval != b.PollInterval ||
		!bytes.Equal(a.InputRequests, b.InputRequests) ||
		!bytes.Equal(a.Result, b.Result) || !bytes.Equal(a.Error, b.Error)
}

// checkJSON validates b as JSON; object requires a non-empty JSON object, and
// otherwise nil is accepted.
func checkJSON(what string, b json.RawMessage, object bool) error {
	if b == nil && !object {
		return nil
	}
	if !json.Valid(b) {
		return fmt.Errorf("%s is not valid JSON: %w", what, ErrInvalid)
	}
	if object && firstByte(b) != '{' {
		return fmt.Errorf("%s is not a JSON object: %w", what, ErrInvalid)
	}
	return nil
}

func firstByte(b []byte) byte {
	for _, c := range b {
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		}
		return c
	}
	return 0
}

func decodeObject(what string, b json.RawMessage, into *map[string]json.RawMessage) error {
	if firstByte(b) != '{' {
		return fmt.Errorf("%s is not a JSON object: %w", what, ErrInvalid)
	}
	if err := json.Unmarshal(b, into); err != nil {
		return fmt.Errorf("%s: %w: %w", what, ErrInvalid, err)
	}
	return nil
}

// objectKeys returns the keys of a JSON object in sorted order.
func objectKeys(what string, b json.RawMessage) ([]string, error) {
	var m map[string]json.RawMessage
	if err := decodeObject(what, b, &m); err != nil {
		return nil, err
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys, nil
}
