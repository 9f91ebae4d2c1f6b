package task_test

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weftmcp/weft/task"
)

var t0 = time.Date(2026, 7, 28, 12, 0, 0, 0, time.UTC)

func TestStatus(t *testing.T) {
	tests := []struct {
		s               task.Status
		terminal, valid bool
	}{
		{task.Working, false, true},
		{task.InputRequired, false, true},
		{task.Completed, true, true},
		{task.Failed, true, true},
		{task.Cancelled, true, true},
		{"canceled", false, false},
		{"", false, false},
	}
	for _, tc := range tests {
		if got := tc.s.IsTerminal(); got != tc.terminal {
			t.Errorf("%q.IsTerminal() = %v, want %v", tc.s, got, tc.terminal)
		}
		if got := tc.s.Valid(); got != tc.valid {
			t.Errorf("%q.Valid() = %v, want %v", tc.s, got, tc.valid)
		}
	}
}

func TestNewID(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		id, err := task.NewID()
		if err != nil {
			t.Fatal(err)
		}
		if len(id) != 43 || strings.Trim(id, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_") != "" {
			t.Fatalf("NewID() = %q: want 43 base64url characters", id)
		}
		if seen[id] {
			t.Fatalf("NewID() repeated %q", id)
		}
		seen[id] = true
	}
}

func newRecord(t *testing.T, spec task.NewTask) *task.Record {
	t.Helper()
	if spec.Operation == "" {
		spec.Operation = "op"
	}
	r, err := task.NewRecord(spec, t0)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// claimed returns a record claimed by "w" at t0 for a minute.
func claimed(t *testing.T) *task.Record {
	t.Helper()
	r := newRecord(t, task.NewTask{})
	if ok, _ := r.ApplyClaim("w", t0, time.Minute); !ok {
		t.Fatal("claim failed")
	}
	return r
}

func TestClone(t *testing.T) {
	r := newRecord(t, task.NewTask{Params: json.RawMessage(`{"a":1}`), State: json.RawMessage(`[1]`)})
	r.IssuedKeys = []string{"k"}
	c := r.Clone()
	c.Params[2] = 'X'
	c.State[1] = '2'
	c.IssuedKeys[0] = "changed"
	if string(r.Params) != `{"a":1}` || string(r.State) != `[1]` || r.IssuedKeys[0] != "k" {
		t.Fatalf("Clone shares memory with the original: %+v", r)
	}
	if (*task.Record)(nil).Clone() != nil {
		t.Fatal("nil.Clone() != nil")
	}
}

func TestApplyClaim(t *testing.T) {
	tests := []struct {
		name             string
		setup            func(r *task.Record)
		at               time.Time
		claimed, changed bool
		status           task.Status
	}{
		{"fresh", func(*task.Record) {}, t0, true, true, task.Working},
		{"live lease", func(r *task.Record) { r.ApplyClaim("x", t0, time.Minute) }, t0.Add(59 * time.Second), false, false, task.Working},
		{"lapsed lease", func(r *task.Record) { r.ApplyClaim("x", t0, time.Minute) }, t0.Add(time.Minute), true, true, task.Working},
		{"expired ttl", func(r *task.Record) { r.ExpiresAt = t0.Add(time.Second) }, t0.Add(time.Second), false, false, task.Working},
		{"input required", func(r *task.Record) { r.Status = task.InputRequired }, t0, false, false, task.InputRequired},
		{"terminal", func(r *task.Record) { r.Status = task.Completed }, t0, false, false, task.Completed},
		{"cancel requested, lapsed", func(r *task.Record) {
			r.ApplyClaim("x", t0, time.Minute)
			r.CancelRequested = true
		}, t0.Add(2 * time.Minute), false, true, task.Cancelled},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := newRecord(t, task.NewTask{})
			tc.setup(r)
			fence, attempts := r.Fence, r.Attempts
			claimed, changed := r.ApplyClaim("w", tc.at, time.Minute)
			if claimed != tc.claimed || changed != tc.changed || r.Status != tc.status {
				t.Fatalf("ApplyClaim = %v, %v, status %s; want %v, %v, %s", claimed, changed, r.Status, tc.claimed, tc.changed, tc.status)
			}
			if changed && r.Fence != fence+1 {
				t.Fatalf("fence %d -> %d, want +1", fence, r.Fence)
			}
			if claimed && (r.Attempts != attempts+1 || r.LeaseOwner != "w" || !r.LeaseExpiresAt.Equal(tc.at.Add(time.Minute))) {
				t.Fatalf("claimed record %+v", r)
			}
		})
	}
}

func TestApplyFinish(t *testing.T) {
	tests := []struct {
		name    string
		prepare func(r *task.Record)
		fence   int64 // relative to the claim's fence
		out     task.Outcome
		err     error
		status  task.Status
	}{
		{"complete", nil, 0, task.Complete(json.RawMessage(` {"x":1}`)), nil, task.Completed},
		{"stale fence", nil, -1, task.Complete(json.RawMessage(`{}`)), task.ErrLeaseLost, task.Working},
		{"future fence", nil, 1, task.Complete(json.RawMessage(`{}`)), task.ErrLeaseLost, task.Working},
		{"not leased", func(r *task.Record) { r.LeaseOwner = "" }, 0, task.Complete(json.RawMessage(`{}`)), task.ErrLeaseLost, task.Working},
		{"need input", nil, 0, task.NeedInput(json.RawMessage(`{"b":1,"a":2}`), nil), nil, task.InputRequired},
		{"need input after cancel", func(r *task.Record) { r.CancelRequested = true }, 0,
			task.NeedInput(json.RawMessage(`{"a":1}`), nil), nil, task.Cancelled},
		{"complete after cancel", func(r *task.Record) { r.CancelRequested = true }, 0,
			task.Complete(json.RawMessage(`{}`)), nil, task.Completed},
		{"reused key", func(r *task.Record) { r.IssuedKeys = []string{"a"} }, 0,
			task.NeedInput(json.RawMessage(`{"a":1}`), nil), task.ErrKeyReused, task.Working},
		{"reused key wins over cancel", func(r *task.Record) { r.IssuedKeys = []string{"a"}; r.CancelRequested = true }, 0,
			task.NeedInput(json.RawMessage(`{"a":1}`), nil), task.ErrKeyReused, task.Working},
		{"bad result", nil, 0, task.Complete(json.RawMessage(`1`)), task.ErrInvalid, task.Working},
		{"bad status", nil, 0, task.Outcome{Status: task.InputRequired + "x"}, task.ErrInvalid, task.Working},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := claimed(t)
			if tc.prepare != nil {
				tc.prepare(r)
			}
			before := r.Clone()
			err := r.ApplyFinish(r.Fence+tc.fence, tc.out, t0.Add(time.Second))
			if !errors.Is(err, tc.err) || (err == nil) != (tc.err == nil) {
				t.Fatalf("ApplyFinish error = %v, want %v", err, tc.err)
			}
			if r.Status != tc.status {
				t.Fatalf("status = %s, want %s", r.Status, tc.status)
			}
			if err != nil {
				if r.LeaseOwner != before.LeaseOwner || r.Fence != before.Fence || !slices.Equal(r.IssuedKeys, before.IssuedKeys) {
					t.Fatalf("failed ApplyFinish changed the record: %+v", r)
				}
				return
			}
			if r.LeaseOwner != "" || !r.UpdatedAt.Equal(t0.Add(time.Second)) {
				t.Fatalf("lease %q updated %v; want released, updated at t0+1s", r.LeaseOwner, r.UpdatedAt)
			}
			if tc.status == task.InputRequired && (!slices.Equal(r.IssuedKeys, []string{"a", "b"}) || r.Step != 2) {
				t.Fatalf("keys %v step %d; want [a b] (sorted), 2", r.IssuedKeys, r.Step)
			}
		})
	}
}

func TestApplyInput(t *testing.T) {
	waiting := func(t *testing.T) *task.Record {
		r := claimed(t)
		if err := r.ApplyFinish(r.Fence, task.NeedInput(json.RawMessage(`{"a":{},"b":{}}`), nil), t0); err != nil {
			t.Fatal(err)
		}
		return r
	}
	tests := []struct {
		name      string
		prepare   func(r *task.Record)
		responses string
		changed   bool
		err       error
		status    task.Status
	}{
		{"partial", nil, `{"a":1}`, true, nil, task.InputRequired},
		{"all", nil, `{"a":1,"b":2}`, true, nil, task.Working},
		{"unknown only", nil, `{"c":1}`, false, nil, task.InputRequired},
		{"not an object", nil, `[{"a":1}]`, false, task.ErrInvalid, task.InputRequired},
		{"invalid json", nil, `{"a":`, false, task.ErrInvalid, task.InputRequired},
		{"working task", func(r *task.Record) { r.Status = task.Working }, `{"a":1}`, false, nil, task.Working},
		{"corrupt stored requests", func(r *task.Record) { r.InputRequests = json.RawMessage(`[]`) }, `{"a":1}`, false, task.ErrInvalid, task.InputRequired},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := waiting(t)
			if tc.prepare != nil {
				tc.prepare(r)
			}
			changed, err := r.ApplyInput(json.RawMessage(tc.responses), t0.Add(time.Second))
			if changed != tc.changed || !errors.Is(err, tc.err) || (err == nil) != (tc.err == nil) {
				t.Fatalf("ApplyInput = %v, %v; want %v, %v", changed, err, tc.changed, tc.err)
			}
			if r.Status != tc.status {
				t.Fatalf("status %s, want %s", r.Status, tc.status)
			}
		})
	}
}

func TestApplyCancelAndExpiry(t *testing.T) {
	r := claimed(t)
	if !r.ApplyCancel(t0) || r.Status != task.Working || !r.CancelRequested {
		t.Fatalf("cancel of a running task: %+v", r)
	}
	if r.ApplyCancel(t0) {
		t.Fatal("second cancel reported a change")
	}
	if _, err := r.ApplyRenew(r.Fence, t0, time.Minute); err != nil {
		t.Fatal(err)
	}
	e := newRecord(t, task.NewTask{TTL: time.Minute})
	if e.ApplyExpiry(t0.Add(59*time.Second), json.RawMessage(task.ExpiredErrorJSON), "x") {
		t.Fatal("expired before its TTL")
	}
	if !e.ApplyExpiry(t0.Add(time.Minute), json.RawMessage(task.ExpiredErrorJSON), "x") || e.Status != task.Failed {
		t.Fatalf("not expired at its TTL: %+v", e)
	}
	if e.ApplyExpiry(t0.Add(2*time.Minute), nil, "") || e.ApplyCancel(t0) {
		t.Fatal("terminal task changed")
	}
}

func TestPurgeable(t *testing.T) {
	tests := []struct {
		name      string
		status    task.Status
		updated   time.Duration // after t0
		expires   time.Duration // after t0; 0 = never
		at        time.Duration
		retention time.Duration
		want      bool
	}{
		{"working", task.Working, 0, 0, time.Hour, 0, false},
		{"completed, no ttl, within retention", task.Completed, 0, 0, 59 * time.Minute, time.Hour, false},
		{"completed, no ttl, after retention", task.Completed, 0, 0, time.Hour, time.Hour, true},
		{"completed early, ttl later", task.Completed, time.Minute, 2 * time.Hour, 2*time.Hour + 59*time.Minute, time.Hour, false},
		{"completed early, after ttl+retention", task.Completed, time.Minute, 2 * time.Hour, 3 * time.Hour, time.Hour, true},
		{"expired late", task.Failed, 3 * time.Hour, 2 * time.Hour, 3*time.Hour + 59*time.Minute, time.Hour, false},
		{"negative retention", task.Cancelled, 0, 0, 0, -time.Hour, true},
	}
	for _, tc := range tests {
		r := &task.Record{Status: tc.status, UpdatedAt: t0.Add(tc.updated)}
		if tc.expires > 0 {
			r.ExpiresAt = t0.Add(tc.expires)
		}
		if got := r.Purgeable(t0.Add(tc.at), tc.retention); got != tc.want {
			t.Errorf("%s: Purgeable = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestNotifyChannels(t *testing.T) {
	working := newRecord(t, task.NewTask{})
	leased := claimed(t)
	progressed := leased.Clone()
	progressed.StatusMessage = "50%"
	cancelReq := leased.Clone()
	cancelReq.CancelRequested = true
	waiting := leased.Clone()
	waiting.Status, waiting.LeaseOwner = task.InputRequired, ""
	resumed := waiting.Clone()
	resumed.Status = task.Working
	renewed := leased.Clone()
	renewed.LeaseExpiresAt = renewed.LeaseExpiresAt.Add(time.Minute)
	tests := []struct {
		name          string
		before, after *task.Record
		want          []string
	}{
		{"create", nil, working, []string{task.ChannelChanged, task.ChannelRunnable}},
		{"claim", working, leased, nil},
		{"renew", leased, renewed, nil},
		{"progress", leased, progressed, []string{task.ChannelChanged}},
		{"cancel running", leased, cancelReq, []string{task.ChannelCancel}},
		{"input required", leased, waiting, []string{task.ChannelChanged}},
		{"input complete", waiting, resumed, []string{task.ChannelChanged, task.ChannelRunnable}},
	}
	for _, tc := range tests {
		if got := task.NotifyChannels(tc.before, tc.after); !slices.Equal(got, tc.want) {
			t.Errorf("%s: NotifyChannels = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestSweepOptionsNormalize(t *testing.T) {
	o, err := task.SweepOptions{Retention: -time.Second}.Normalize()
	if err != nil || string(o.ExpiredError) != task.ExpiredErrorJSON || o.ExpiredMessage != task.ExpiredMessage || o.Limit != 1000 || o.Retention != 0 {
		t.Fatalf("Normalize() = %+v, %v", o, err)
	}
	if _, err := (task.SweepOptions{ExpiredError: json.RawMessage(`[]`)}).Normalize(); !errors.Is(err, task.ErrInvalid) {
		t.Fatalf("Normalize with a non-object error: %v", err)
	}
}
