package task

import (
	"context"
	"encoding/json"
	"time"
)

// RecordUpdate is the primitive a [Store]'s record methods are built on:
// it applies apply to the task with the given id atomically, under that
// task's lock, with the store's clock, stores the record when apply reports
// a change, publishes its NotifyChannels, and returns the record (a private
// copy) and whether it changed. It fails with [ErrNotFound] for an unknown
// id and with apply's error, changing nothing. op names the operation in
// errors.
type RecordUpdate func(ctx context.Context, op, id string, apply func(r *Record, now time.Time) (changed bool, err error)) (*Record, bool, error)

// RecordMethods implements the [Store] methods that are one
// read-modify-write of a task under the Record.Apply* rules (Renew, Finish,
// Release, Unclaim, SetStatusMessage, SubmitInput, RequestCancel) over a store's
// [RecordUpdate]. A store embeds it, built with [NewRecordMethods]; the
// memory, SQLite and PostgreSQL stores do.
type RecordMethods struct{ update RecordUpdate }

// NewRecordMethods returns the record methods over update.
func NewRecordMethods(update RecordUpdate) RecordMethods { return RecordMethods{update: update} }

// Renew implements Store.Renew.
func (m RecordMethods) Renew(ctx context.Context, id string, fence int64, lease time.Duration) (bool, error) {
	var cancel bool
	_, _, err := m.update(ctx, "renew", id, func(r *Record, now time.Time) (bool, error) {
		var err error
		cancel, err = r.ApplyRenew(fence, now, lease)
		return true, err // NotifyChannels publishes nothing for lease bookkeeping
	})
	return cancel, err
}

// Release implements Store.Release.
func (m RecordMethods) Release(ctx context.Context, id string, fence int64) error {
	_, _, err := m.update(ctx, "release", id, func(r *Record, now time.Time) (bool, error) {
		return true, r.ApplyRelease(fence)
	})
	return err
}

// Unclaim implements Store.Unclaim.
func (m RecordMethods) Unclaim(ctx context.Context, id string, fence int64) error {
	_, _, err := m.update(ctx, "unclaim", id, func(r *Record, now time.Time) (bool, error) {
		return true, r.ApplyUnclaim(fence)
	})
	return err
}

// Finish implements Store.Finish.
func (m RecordMethods) Finish(ctx context.Context, id string, fence int64, out Outcome) (*Record, error) {
	r, _, err := m.update(ctx, "finish", id, func(r *Record, now time.Time) (bool, error) {
		return true, r.ApplyFinish(fence, out, now)
	})
	return r, err
}

// SetStatusMessage implements Store.SetStatusMessage.
func (m RecordMethods) SetStatusMessage(ctx context.Context, id string, fence int64, msg string) error {
	_, _, err := m.update(ctx, "set status message", id, func(r *Record, now time.Time) (bool, error) {
		return true, r.ApplyStatusMessage(fence, msg, now)
	})
	return err
}

// SubmitInput implements Store.SubmitInput.
func (m RecordMethods) SubmitInput(ctx context.Context, id string, responses json.RawMessage) (bool, error) {
	_, changed, err := m.update(ctx, "submit input", id, func(r *Record, now time.Time) (bool, error) {
		return r.ApplyInput(responses, now)
	})
	return changed, err
}

// RequestCancel implements Store.RequestCancel.
func (m RecordMethods) RequestCancel(ctx context.Context, id string) (*Record, error) {
	r, _, err := m.update(ctx, "request cancel", id, func(r *Record, now time.Time) (bool, error) {
		return r.ApplyCancel(now), nil
	})
	return r, err
}
