package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weftmcp/weft/task"
)

func testCreateGet(t *testing.T, e *env) {
	tests := []struct {
		name string
		spec task.NewTask
	}{
		{"minimal", task.NewTask{Operation: "echo"}},
		{"full", task.NewTask{
			Owner:         task.Owner{Principal: "alice", Partition: "tenant-1"},
			Operation:     "tools/slow",
			Params:        json.RawMessage(`{"n": 3, "s": "x"}`),
			TTL:           time.Hour,
			PollInterval:  2 * time.Second,
			StatusMessage: "queued",
			State:         json.RawMessage(`[1,2]`),
		}},
		{"explicit id", task.NewTask{ID: "explicit-id-1", Operation: "echo", Params: json.RawMessage(`null`)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := e.with(t)
			before := e.clock.Now().Add(-time.Millisecond)
			created := e.create(tc.spec)
			got := e.get(created.ID)
			if tc.spec.ID != "" && got.ID != tc.spec.ID {
				t.Fatalf("ID = %q, want %q", got.ID, tc.spec.ID)
			}
			if tc.spec.ID == "" && len(got.ID) != 43 {
				t.Fatalf("generated ID %q has %d chars, want 43", got.ID, len(got.ID))
			}
			if got.Owner != tc.spec.Owner || got.Operation != tc.spec.Operation ||
				got.TTL != tc.spec.TTL || got.PollInterval != tc.spec.PollInterval ||
				got.StatusMessage != tc.spec.StatusMessage {
				t.Fatalf("Get = %+v, want fields of %+v", got, tc.spec)
			}
			wantJSON(t, "Params", got.Params, string(tc.spec.Params))
			wantJSON(t, "State", got.State, string(tc.spec.State))
			if got.Status != task.Working || got.Step != 1 || got.Attempts != 0 || got.LeaseOwner != "" ||
				got.CancelRequested || got.InputRequests != nil || len(got.IssuedKeys) != 0 {
				t.Fatalf("initial record = %+v, want working step 1, unleased, no input", got)
			}
			if got.CreatedAt.Before(before) || !got.UpdatedAt.Equal(got.CreatedAt) || !got.CreatedAt.Equal(created.CreatedAt) {
				t.Fatalf("CreatedAt %v UpdatedAt %v (create returned %v), want equal and after %v",
					got.CreatedAt, got.UpdatedAt, created.CreatedAt, before)
			}
			switch {
			case tc.spec.TTL == 0 && !got.ExpiresAt.IsZero():
				t.Fatalf("ExpiresAt = %v, want zero for unlimited TTL", got.ExpiresAt)
			case tc.spec.TTL > 0 && !got.ExpiresAt.Equal(got.CreatedAt.Add(tc.spec.TTL)):
				t.Fatalf("ExpiresAt = %v, want CreatedAt+TTL = %v", got.ExpiresAt, got.CreatedAt.Add(tc.spec.TTL))
			}
			// Records are private copies.
			got.Params = json.RawMessage(`"mutated"`)
			got.Status = task.Failed
			if again := e.get(created.ID); again.Status != task.Working {
				t.Fatalf("mutating a returned record changed the store")
			}
		})
	}
	_, err := e.s.Create(e.ctx, task.NewTask{ID: "explicit-id-1", Operation: "echo"})
	wantErr(t, "Create with a taken ID", err, task.ErrExists)
}

func testCreateInvalid(t *testing.T, e *env) {
	tests := []struct {
		name string
		spec task.NewTask
	}{
		{"empty operation", task.NewTask{}},
		{"bad params", task.NewTask{Operation: "x", Params: json.RawMessage(`{`)}},
		{"bad state", task.NewTask{Operation: "x", State: json.RawMessage(`nope`)}},
		{"negative ttl", task.NewTask{Operation: "x", TTL: -time.Second}},
		{"negative poll", task.NewTask{Operation: "x", PollInterval: -time.Second}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.s.Create(e.ctx, tc.spec)
			wantErr(t, "Create", err, task.ErrInvalid)
		})
	}
}

func testNotFound(t *testing.T, e *env) {
	const id = "no-such-task"
	tests := []struct {
		name string
		call func() error
	}{
		{"Get", func() error { _, err := e.s.Get(e.ctx, id); return err }},
		{"SubmitInput", func() error { _, err := e.s.SubmitInput(e.ctx, id, json.RawMessage(`{"a":1}`)); return err }},
		{"RequestCancel", func() error { _, err := e.s.RequestCancel(e.ctx, id); return err }},
		{"Renew", func() error { _, err := e.s.Renew(e.ctx, id, 1, time.Minute); return err }},
		{"Finish", func() error { _, err := e.s.Finish(e.ctx, id, 1, task.Complete(json.RawMessage(`{}`))); return err }},
		{"SetStatusMessage", func() error { return e.s.SetStatusMessage(e.ctx, id, 1, "x") }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { wantErr(t, tc.name, tc.call(), task.ErrNotFound) })
	}
}

func testClaimSkipsUnrunnable(t *testing.T, e *env) {
	e.noClaim()
	// input_required, terminal and expired tasks are never claimed.
	a := e.create(task.NewTask{})
	e.finish(e.claimID(a.ID, "w", time.Minute), task.NeedInput(json.RawMessage(`{"k":{}}`), nil))
	b := e.create(task.NewTask{})
	e.finish(e.claimID(b.ID, "w", time.Minute), task.Complete(json.RawMessage(`{}`)))
	c := e.create(task.NewTask{TTL: time.Second})
	e.clock.Advance(2 * time.Second)
	e.noClaim()
	e.wantStatus(c.ID, task.Working)
	// Claims go oldest first.
	d1 := e.create(task.NewTask{})
	e.clock.Advance(time.Millisecond)
	d2 := e.create(task.NewTask{})
	e.claimID(d1.ID, "w", time.Minute)
	e.claimID(d2.ID, "w", time.Minute)
	e.noClaim()
	if _, err := e.s.Claim(e.ctx, "", time.Minute, 1); err == nil {
		t.Fatalf("Claim with empty worker: want error")
	}
	if _, err := e.s.Claim(e.ctx, "w", time.Minute, 0); !errors.Is(err, task.ErrInvalid) {
		t.Fatalf("Claim with max 0: %v, want ErrInvalid", err)
	}
}

// testClaimBatch: one Claim takes up to max tasks, oldest first, each
// leased and fenced as a single claim would be, and settles cancelled ones
// on the way without counting them.
func testClaimBatch(t *testing.T, e *env) {
	var ids []string
	for range 5 {
		ids = append(ids, e.create(task.NewTask{}).ID)
		e.clock.Advance(time.Millisecond)
	}
	// The oldest task was running when its cancellation was requested, and
	// its worker died: the batch settles it as Cancelled and skips it.
	dead := e.claimID(ids[0], "dead", time.Second)
	if _, err := e.s.RequestCancel(e.ctx, ids[0]); err != nil {
		t.Fatalf("RequestCancel: %v", err)
	}
	e.clock.Advance(2 * time.Second)
	got, err := e.s.Claim(e.ctx, "w", time.Minute, 3)
	if err != nil {
		t.Fatalf("Claim(max 3): %v", err)
	}
	var gotIDs []string
	for _, r := range got {
		gotIDs = append(gotIDs, r.ID)
		if r.LeaseOwner != "w" || r.Fence != 1 || r.Attempts != 1 || r.Status != task.Working {
			t.Fatalf("claimed %s", summary(r))
		}
		if held := e.get(r.ID); held.LeaseOwner != "w" || held.Fence != r.Fence {
			t.Fatalf("stored %s, want the claim %s", summary(held), summary(r))
		}
	}
	if want := ids[1:4]; !slices.Equal(gotIDs, want) {
		t.Fatalf("Claim(max 3) = %v, want %v (oldest first, the cancelled one settled)", gotIDs, want)
	}
	if r := e.get(dead.ID); r.Status != task.Cancelled {
		t.Fatalf("cancel-requested task after the batch: %s, want cancelled", summary(r))
	}
	got, err = e.s.Claim(e.ctx, "w", time.Minute, 10)
	if err != nil || len(got) != 1 || got[0].ID != ids[4] {
		t.Fatalf("Claim(max 10) = %d tasks, %v; want only %s", len(got), err, ids[4])
	}
	e.noClaim()
}

func testClaimExclusive(t *testing.T, e *env) {
	r := e.create(task.NewTask{})
	const claimers = 16
	var wg sync.WaitGroup
	results := make(chan *task.Record, claimers)
	start := make(chan struct{})
	for i := range claimers {
		wg.Go(func() {
			<-start
			got, err := e.s.Claim(e.ctx, "w"+string(rune('a'+i)), time.Minute, 1+i%3)
			if err != nil {
				t.Errorf("Claim: %v", err)
			}
			for _, r := range got {
				results <- r
			}
		})
	}
	close(start)
	wg.Wait()
	close(results)
	var winners []*task.Record
	for got := range results {
		if got != nil {
			winners = append(winners, got)
		}
	}
	if len(winners) != 1 || winners[0].ID != r.ID || winners[0].Fence != r.Fence+1 || winners[0].Attempts != 1 {
		t.Fatalf("%d claimers won (%v), want exactly one with fence %d", len(winners), winners, r.Fence+1)
	}
	held := e.get(r.ID)
	if held.LeaseOwner != winners[0].LeaseOwner || held.Fence != winners[0].Fence {
		t.Fatalf("stored lease %q fence %d, want %q fence %d", held.LeaseOwner, held.Fence, winners[0].LeaseOwner, winners[0].Fence)
	}
}

func testClaimManyExclusive(t *testing.T, e *env) {
	const tasks, claimers = 40, 8
	for range tasks {
		e.create(task.NewTask{})
	}
	var mu sync.Mutex
	seen := map[string]int{}
	var wg sync.WaitGroup
	for i := range claimers {
		wg.Go(func() {
			for {
				got, err := e.s.Claim(e.ctx, "w"+string(rune('a'+i)), time.Minute, 1+i%4)
				if err != nil {
					t.Errorf("Claim: %v", err)
					return
				}
				if len(got) == 0 {
					return
				}
				mu.Lock()
				for _, r := range got {
					seen[r.ID]++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(seen) != tasks {
		t.Fatalf("claimed %d distinct tasks, want %d", len(seen), tasks)
	}
	for id, n := range seen {
		if n != 1 {
			t.Fatalf("task %s claimed %d times, want once", id, n)
		}
	}
}

func testLeaseExpiryReclaim(t *testing.T, e *env) {
	r := e.create(task.NewTask{})
	first := e.claimID(r.ID, "w1", time.Minute)
	e.clock.Advance(30 * time.Second)
	e.noClaim()
	e.clock.Advance(31 * time.Second)
	second := e.claimID(r.ID, "w2", time.Minute)
	if second.Fence <= first.Fence || second.Attempts != 2 || second.LeaseOwner != "w2" || second.Step != 1 {
		t.Fatalf("re-claim = fence %d attempts %d owner %q step %d; want fence > %d, attempts 2, owner w2, step 1",
			second.Fence, second.Attempts, second.LeaseOwner, second.Step, first.Fence)
	}
	stale := []struct {
		name string
		call func() error
	}{
		{"Renew", func() error { _, err := e.s.Renew(e.ctx, r.ID, first.Fence, time.Minute); return err }},
		{"SetStatusMessage", func() error { return e.s.SetStatusMessage(e.ctx, r.ID, first.Fence, "stale") }},
		{"Finish", func() error {
			_, err := e.s.Finish(e.ctx, r.ID, first.Fence, task.Complete(json.RawMessage(`{"by":"w1"}`)))
			return err
		}},
	}
	for _, tc := range stale {
		t.Run("stale "+tc.name, func(t *testing.T) { wantErr(t, tc.name, tc.call(), task.ErrLeaseLost) })
	}
	done := e.finish(second, task.Complete(json.RawMessage(`{"by":"w2"}`)))
	wantJSON(t, "Result", done.Result, `{"by":"w2"}`)
	if done.LeaseOwner != "" || !done.LeaseExpiresAt.IsZero() {
		t.Fatalf("finished task still leased: %q %v", done.LeaseOwner, done.LeaseExpiresAt)
	}
	// A finished lease cannot be used again.
	_, err := e.s.Finish(e.ctx, r.ID, second.Fence, task.Complete(json.RawMessage(`{}`)))
	wantErr(t, "Finish twice", err, task.ErrLeaseLost)
}

func testRenewExtendsLease(t *testing.T, e *env) {
	r := e.create(task.NewTask{})
	c := e.claimID(r.ID, "w", time.Minute)
	e.clock.Advance(50 * time.Second)
	cancel, err := e.s.Renew(e.ctx, r.ID, c.Fence, time.Minute)
	if err != nil || cancel {
		t.Fatalf("Renew = %v, %v; want false, nil", cancel, err)
	}
	e.clock.Advance(50 * time.Second)
	e.noClaim()
	// A lapsed lease nobody re-claimed may still be renewed (fencing keeps
	// it safe)...
	e.clock.Advance(15 * time.Second)
	if _, err := e.s.Renew(e.ctx, r.ID, c.Fence, time.Minute); err != nil {
		t.Fatalf("Renew of a lapsed, unclaimed lease: %v", err)
	}
	e.noClaim()
	// ...but not once someone else has it.
	e.clock.Advance(61 * time.Second)
	e.claimID(r.ID, "w2", time.Minute)
	_, err = e.s.Renew(e.ctx, r.ID, c.Fence, time.Minute)
	wantErr(t, "Renew after re-claim", err, task.ErrLeaseLost)
}

func testRelease(t *testing.T, e *env) {
	r := e.create(task.NewTask{})
	runnable := e.listen(task.ChannelRunnable)
	c := e.claimID(r.ID, "w", time.Hour)
	e.noClaim()
	if err := e.s.Release(e.ctx, r.ID, c.Fence); err != nil {
		t.Fatalf("Release: %v", err)
	}
	runnable.expect(r.ID)
	// Claimable at once, long before the lease would have lapsed, by anyone.
	c2 := e.claimID(r.ID, "w2", time.Hour)
	if c2.Fence == c.Fence || c2.LeaseOwner != "w2" {
		t.Fatalf("re-claim after Release: %+v", c2)
	}
	// The old fence can neither release nor finish any more.
	wantErr(t, "Release with a stale fence", e.s.Release(e.ctx, r.ID, c.Fence), task.ErrLeaseLost)
	_, err := e.s.Finish(e.ctx, r.ID, c.Fence, task.Complete(json.RawMessage(`{}`)))
	wantErr(t, "Finish after Release", err, task.ErrLeaseLost)
	wantErr(t, "Release of an unknown task", e.s.Release(e.ctx, "no-such-task", 1), task.ErrNotFound)
}

// testUnclaim: a lease handed back unrun is released as by Release, and the
// attempt its claim counted is taken back; the fence keeps growing.
func testUnclaim(t *testing.T, e *env) {
	r := e.create(task.NewTask{})
	runnable := e.listen(task.ChannelRunnable)
	c := e.claimID(r.ID, "w", time.Hour)
	if c.Attempts != 1 {
		t.Fatalf("first claim: attempts %d, want 1", c.Attempts)
	}
	if err := e.s.Unclaim(e.ctx, r.ID, c.Fence); err != nil {
		t.Fatalf("Unclaim: %v", err)
	}
	runnable.expect(r.ID)
	got, err := e.s.Get(e.ctx, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Attempts != 0 || got.LeaseOwner != "" || got.Fence != c.Fence {
		t.Fatalf("after Unclaim: attempts %d, owner %q, fence %d; want 0, none, %d", got.Attempts, got.LeaseOwner, got.Fence, c.Fence)
	}
	c2 := e.claimID(r.ID, "w2", time.Hour)
	if c2.Attempts != 1 || c2.Fence <= c.Fence {
		t.Fatalf("re-claim after Unclaim: attempts %d fence %d (first fence %d)", c2.Attempts, c2.Fence, c.Fence)
	}
	wantErr(t, "Unclaim with a stale fence", e.s.Unclaim(e.ctx, r.ID, c.Fence), task.ErrLeaseLost)
	// A step that ran and was cut off keeps its attempt (Release).
	if err := e.s.Release(e.ctx, r.ID, c2.Fence); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if got, err = e.s.Get(e.ctx, r.ID); err != nil || got.Attempts != 1 {
		t.Fatalf("after Release: attempts %d (%v), want 1", got.Attempts, err)
	}
	wantErr(t, "Unclaim of an unknown task", e.s.Unclaim(e.ctx, "no-such-task", 1), task.ErrNotFound)
}

func testFinishOutcomes(t *testing.T, e *env) {
	tests := []struct {
		name       string
		out        task.Outcome
		wantStatus task.Status
		result     string
		rpcErr     string
		requests   string
	}{
		{"complete", task.Outcome{Status: task.Completed, Result: json.RawMessage(`{"content":[],"isError":true}`), StatusMessage: "done"},
			task.Completed, `{"content":[],"isError":true}`, "", ""},
		{"fail", task.Fail(json.RawMessage(`{"code":-32000,"message":"boom"}`)), task.Failed, "", `{"code":-32000,"message":"boom"}`, ""},
		{"cancel", task.Cancel(), task.Cancelled, "", "", ""},
		{"need input", task.NeedInput(json.RawMessage(`{"q1":{"method":"elicitation/create"}}`), json.RawMessage(`{"s":1}`)),
			task.InputRequired, "", "", `{"q1":{"method":"elicitation/create"}}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := e.with(t)
			r := e.create(task.NewTask{StatusMessage: "queued"})
			c := e.claimID(r.ID, "w", time.Minute)
			e.clock.Advance(time.Second)
			got := e.finish(c, tc.out)
			stored := e.get(r.ID)
			for _, rec := range []*task.Record{got, stored} {
				if rec.Status != tc.wantStatus || rec.StatusMessage != tc.out.StatusMessage {
					t.Fatalf("status %s %q, want %s %q", rec.Status, rec.StatusMessage, tc.wantStatus, tc.out.StatusMessage)
				}
				wantJSON(t, "Result", rec.Result, tc.result)
				wantJSON(t, "Error", rec.Error, tc.rpcErr)
				wantJSON(t, "InputRequests", rec.InputRequests, tc.requests)
				if rec.LeaseOwner != "" {
					t.Fatalf("lease not released: %q", rec.LeaseOwner)
				}
				if !rec.UpdatedAt.After(r.UpdatedAt) {
					t.Fatalf("UpdatedAt %v not after creation %v", rec.UpdatedAt, r.UpdatedAt)
				}
			}
			if tc.wantStatus == task.InputRequired {
				if stored.Step != 2 || stored.Attempts != 0 || !slices.Equal(stored.IssuedKeys, []string{"q1"}) {
					t.Fatalf("after input_required: step %d attempts %d keys %v; want 2, 0, [q1]", stored.Step, stored.Attempts, stored.IssuedKeys)
				}
				wantJSON(t, "State", stored.State, `{"s":1}`)
			}
		})
	}
}

func testFinishInvalid(t *testing.T, e *env) {
	tests := []struct {
		name string
		out  task.Outcome
	}{
		{"zero outcome", task.Outcome{}},
		{"working", task.Outcome{Status: task.Working}},
		{"unknown status", task.Outcome{Status: "paused"}},
		{"complete without result", task.Complete(nil)},
		{"complete with array", task.Complete(json.RawMessage(`[1]`))},
		{"complete with bad json", task.Complete(json.RawMessage(`{"a":`))},
		{"fail with string", task.Fail(json.RawMessage(`"boom"`))},
		{"input with no requests", task.NeedInput(json.RawMessage(`{}`), nil)},
		{"input with array", task.NeedInput(json.RawMessage(`["a"]`), nil)},
		{"input with empty key", task.NeedInput(json.RawMessage(`{"":{}}`), nil)},
		{"input with bad state", task.NeedInput(json.RawMessage(`{"k":{}}`), json.RawMessage(`{`))},
	}
	r := e.create(task.NewTask{})
	c := e.claimID(r.ID, "w", time.Minute)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.s.Finish(e.ctx, r.ID, c.Fence, tc.out)
			wantErr(t, "Finish", err, task.ErrInvalid)
			if got := e.get(r.ID); got.Status != task.Working || got.LeaseOwner != "w" || got.Fence != c.Fence {
				t.Fatalf("rejected Finish changed the task: %+v", got)
			}
		})
	}
}

func testInputFlow(t *testing.T, e *env) {
	r := e.create(task.NewTask{Params: json.RawMessage(`{"x":1}`)})
	c := e.claimID(r.ID, "w", time.Minute)
	e.finish(c, task.NeedInput(json.RawMessage(`{"a":{"q":"A?"},"b":{"q":"B?"}}`), json.RawMessage(`{"phase":1}`)))
	e.noClaim()

	steps := []struct {
		name        string
		responses   string
		changed     bool
		status      task.Status
		outstanding string
		received    string
	}{
		{"partial answer plus unknown key", `{"a":"A!","zzz":"ignored"}`, true, task.InputRequired, `{"b":{"q":"B?"}}`, `{"a":"A!"}`},
		{"resubmit answered key", `{"a":"different"}`, false, task.InputRequired, `{"b":{"q":"B?"}}`, `{"a":"A!"}`},
		{"unknown keys only", `{"never":"issued"}`, false, task.InputRequired, `{"b":{"q":"B?"}}`, `{"a":"A!"}`},
		{"empty object", `{}`, false, task.InputRequired, `{"b":{"q":"B?"}}`, `{"a":"A!"}`},
		{"last answer", `{"b":"B!","a":"again"}`, true, task.Working, ``, `{"a":"A!","b":"B!"}`},
		{"resubmit after runnable", `{"b":"B2"}`, false, task.Working, ``, `{"a":"A!","b":"B!"}`},
	}
	for _, st := range steps {
		if got := e.submit(r.ID, st.responses); got != st.changed {
			t.Fatalf("%s: SubmitInput changed = %v, want %v", st.name, got, st.changed)
		}
		rec := e.wantStatus(r.ID, st.status)
		wantJSON(t, st.name+": InputRequests", rec.InputRequests, st.outstanding)
		wantJSON(t, st.name+": InputResponses", rec.InputResponses, st.received)
		if !slices.Equal(rec.IssuedKeys, []string{"a", "b"}) {
			t.Fatalf("%s: IssuedKeys = %v, want [a b]", st.name, rec.IssuedKeys)
		}
	}

	c2 := e.claimID(r.ID, "w", time.Minute)
	if c2.Step != 2 || c2.Attempts != 1 {
		t.Fatalf("second step claim: step %d attempts %d, want 2, 1", c2.Step, c2.Attempts)
	}
	wantJSON(t, "State", c2.State, `{"phase":1}`)
	wantJSON(t, "InputResponses", c2.InputResponses, `{"a":"A!","b":"B!"}`)
	wantJSON(t, "Params", c2.Params, `{"x":1}`)

	// Keys are unique over the task's whole life.
	for _, reused := range []string{`{"a":{}}`, `{"new":{},"b":{}}`} {
		_, err := e.s.Finish(e.ctx, r.ID, c2.Fence, task.NeedInput(json.RawMessage(reused), nil))
		wantErr(t, "Finish reusing a key", err, task.ErrKeyReused)
	}
	if got := e.get(r.ID); got.Status != task.Working || got.LeaseOwner != "w" || !slices.Equal(got.IssuedKeys, []string{"a", "b"}) {
		t.Fatalf("rejected key reuse changed the task: %+v", got)
	}
	e.finish(c2, task.NeedInput(json.RawMessage(`{"c":{"q":"C?"}}`), json.RawMessage(`{"phase":2}`)))
	rec := e.wantStatus(r.ID, task.InputRequired)
	if rec.InputResponses != nil || !slices.Equal(rec.IssuedKeys, []string{"a", "b", "c"}) || rec.Step != 3 {
		t.Fatalf("third step: responses %s keys %v step %d; want none, [a b c], 3", rec.InputResponses, rec.IssuedKeys, rec.Step)
	}
	// An old key is not outstanding any more.
	if e.submit(r.ID, `{"a":"late"}`) {
		t.Fatalf("answer to an old key was accepted")
	}
	e.submit(r.ID, `{"c":"C!"}`)
	c3 := e.claimID(r.ID, "w", time.Minute)
	wantJSON(t, "step 3 InputResponses", c3.InputResponses, `{"c":"C!"}`)
	done := e.finish(c3, task.Complete(json.RawMessage(`{"ok":true}`)))
	if done.InputResponses != nil || done.State != nil || done.InputRequests != nil {
		t.Fatalf("terminal task keeps per-step data: %+v", done)
	}
	if e.submit(r.ID, `{"c":"x"}`) {
		t.Fatalf("input accepted by a completed task")
	}
}

func testInputInvalid(t *testing.T, e *env) {
	r := e.create(task.NewTask{})
	e.finish(e.claimID(r.ID, "w", time.Minute), task.NeedInput(json.RawMessage(`{"a":{}}`), nil))
	for _, bad := range []string{`[1]`, `"a"`, `{"a":`, ``, `null`} {
		_, err := e.s.SubmitInput(e.ctx, r.ID, json.RawMessage(bad))
		wantErr(t, "SubmitInput("+bad+")", err, task.ErrInvalid)
	}
	e.wantStatus(r.ID, task.InputRequired)
}

func testCancel(t *testing.T, e *env) {
	type setup func(e *env, id string) *task.Record // returns the lease, if any
	claimed := func(e *env, id string) *task.Record { return e.claimID(id, "w", 10*time.Second) }
	tests := []struct {
		name   string
		setup  setup
		then   func(t *testing.T, e *env, id string, lease *task.Record)
		status task.Status // right after RequestCancel
		final  task.Status
	}{
		{"queued", func(*env, string) *task.Record { return nil }, nil, task.Cancelled, task.Cancelled},
		{"input required", func(e *env, id string) *task.Record {
			e.finish(claimed(e, id), task.NeedInput(json.RawMessage(`{"k":{}}`), nil))
			return nil
		}, func(t *testing.T, e *env, id string, _ *task.Record) {
			if e.submit(id, `{"k":1}`) {
				t.Fatalf("input accepted after cancel")
			}
			if r := e.get(id); r.InputRequests != nil {
				t.Fatalf("cancelled task still lists input requests %s", r.InputRequests)
			}
		}, task.Cancelled, task.Cancelled},
		{"running, handler gives up", claimed, func(t *testing.T, e *env, id string, l *task.Record) {
			cancel, err := e.s.Renew(e.ctx, id, l.Fence, 10*time.Second)
			if err != nil || !cancel {
				t.Fatalf("Renew = %v, %v; want cancel requested", cancel, err)
			}
			e.finish(l, task.Cancel())
		}, task.Working, task.Cancelled},
		{"running, completes anyway", claimed, func(t *testing.T, e *env, id string, l *task.Record) {
			e.finish(l, task.Complete(json.RawMessage(`{"late":true}`)))
		}, task.Working, task.Completed},
		{"running, asks for input", claimed, func(t *testing.T, e *env, id string, l *task.Record) {
			e.finish(l, task.NeedInput(json.RawMessage(`{"k":{}}`), nil))
		}, task.Working, task.Cancelled},
		{"running, worker dies", claimed, func(t *testing.T, e *env, id string, l *task.Record) {
			e.clock.Advance(11 * time.Second)
			e.noClaim() // the claim attempt turns it cancelled instead of running it
			_, err := e.s.Finish(e.ctx, id, l.Fence, task.Complete(json.RawMessage(`{}`)))
			wantErr(t, "Finish by the dead worker", err, task.ErrLeaseLost)
		}, task.Working, task.Cancelled},
		{"lapsed lease", func(e *env, id string) *task.Record {
			l := claimed(e, id)
			e.clock.Advance(11 * time.Second)
			return l
		}, func(t *testing.T, e *env, id string, l *task.Record) {
			_, err := e.s.Finish(e.ctx, id, l.Fence, task.Complete(json.RawMessage(`{}`)))
			wantErr(t, "Finish under the lapsed lease", err, task.ErrLeaseLost)
		}, task.Cancelled, task.Cancelled},
		{"completed", func(e *env, id string) *task.Record {
			e.finish(claimed(e, id), task.Complete(json.RawMessage(`{}`)))
			return nil
		}, nil, task.Completed, task.Completed},
		{"failed", func(e *env, id string) *task.Record {
			e.finish(claimed(e, id), task.Fail(json.RawMessage(`{"code":1,"message":"x"}`)))
			return nil
		}, nil, task.Failed, task.Failed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := e.with(t)
			r := e.create(task.NewTask{})
			lease := tc.setup(e, r.ID)
			before := e.get(r.ID)
			got, err := e.s.RequestCancel(e.ctx, r.ID)
			if err != nil {
				t.Fatalf("RequestCancel: %v", err)
			}
			if got.Status != tc.status {
				t.Fatalf("after RequestCancel: status %s, want %s", got.Status, tc.status)
			}
			if wantFlag := !before.Status.IsTerminal(); got.CancelRequested != wantFlag {
				t.Fatalf("CancelRequested = %v, want %v", got.CancelRequested, wantFlag)
			}
			again, err := e.s.RequestCancel(e.ctx, r.ID) // idempotent
			if err != nil || again.Status != got.Status {
				t.Fatalf("second RequestCancel = %v, %v", summary(again), err)
			}
			if tc.then != nil {
				tc.then(t, e, r.ID, lease)
			}
			e.wantStatus(r.ID, tc.final)
		})
	}
}

func testExpireAndPurge(t *testing.T, e *env) {
	t0 := e.clock.Now()
	waiting := e.create(task.NewTask{TTL: time.Minute})
	e.finish(e.claimID(waiting.ID, "w", time.Hour), task.NeedInput(json.RawMessage(`{"k":{}}`), nil))
	running := e.create(task.NewTask{TTL: time.Minute})
	runLease := e.claimID(running.ID, "w", time.Hour)
	doneTTL := e.create(task.NewTask{TTL: time.Minute})
	e.finish(e.claimID(doneTTL.ID, "w", time.Hour), task.Complete(json.RawMessage(`{}`)))
	doneUnlimited := e.create(task.NewTask{})
	e.finish(e.claimID(doneUnlimited.ID, "w", time.Hour), task.Complete(json.RawMessage(`{}`)))
	queued := e.create(task.NewTask{TTL: time.Minute})
	unlimited := e.create(task.NewTask{})

	opts := task.SweepOptions{
		Retention:      10 * time.Minute,
		ExpiredError:   json.RawMessage(`{"code":-32001,"message":"too slow"}`),
		ExpiredMessage: "gone",
	}
	sweep := func(at time.Duration, want task.SweepResult) {
		t.Helper()
		got, err := e.s.ExpireAndPurge(e.ctx, t0.Add(at), opts)
		if err != nil || got != want {
			t.Fatalf("ExpireAndPurge(+%v) = %+v, %v; want %+v", at, got, err, want)
		}
	}
	sweep(30*time.Second, task.SweepResult{})
	sweep(90*time.Second, task.SweepResult{Expired: 3})
	for _, id := range []string{queued.ID, waiting.ID, running.ID} {
		r := e.wantStatus(id, task.Failed)
		wantJSON(t, "expired Error", r.Error, `{"code":-32001,"message":"too slow"}`)
		if r.StatusMessage != "gone" || r.InputRequests != nil || r.LeaseOwner != "" {
			t.Fatalf("expired task %+v: want message gone, no input, no lease", r)
		}
	}
	_, err := e.s.Finish(e.ctx, running.ID, runLease.Fence, task.Complete(json.RawMessage(`{}`)))
	wantErr(t, "Finish after expiry", err, task.ErrLeaseLost)
	e.wantStatus(doneTTL.ID, task.Completed)
	e.wantStatus(unlimited.ID, task.Working)
	sweep(91*time.Second, task.SweepResult{}) // idempotent

	// Retention counts from the later of the terminal transition and expiry:
	// doneUnlimited finished near t0 (purgeable from ~t0+10m), doneTTL
	// expires near t0+1m (purgeable from ~t0+11m), the expired ones were
	// marked at t0+90s (purgeable from t0+11m30s).
	sweep(10*time.Minute+30*time.Second, task.SweepResult{Purged: 1})
	if _, err := e.s.Get(e.ctx, doneUnlimited.ID); err == nil {
		t.Fatalf("purged task still found")
	} else {
		wantErr(t, "Get purged task", err, task.ErrNotFound)
	}
	sweep(11*time.Minute+30*time.Second, task.SweepResult{Purged: 4})
	for _, id := range []string{queued.ID, waiting.ID, running.ID, doneTTL.ID} {
		_, err := e.s.Get(e.ctx, id)
		wantErr(t, "Get purged task", err, task.ErrNotFound)
	}
	e.wantStatus(unlimited.ID, task.Working)

	// Default error object, and the limit.
	a := e.create(task.NewTask{TTL: time.Second})
	e.create(task.NewTask{TTL: time.Second})
	got, err := e.s.ExpireAndPurge(e.ctx, e.clock.Now().Add(time.Hour), task.SweepOptions{Limit: 1, Retention: 2 * time.Hour})
	if err != nil || got.Expired != 1 {
		t.Fatalf("ExpireAndPurge with Limit 1 = %+v, %v; want 1 expired", got, err)
	}
	if _, err := e.s.ExpireAndPurge(e.ctx, e.clock.Now().Add(time.Hour), task.SweepOptions{Retention: 2 * time.Hour}); err != nil {
		t.Fatalf("ExpireAndPurge: %v", err)
	}
	wantJSON(t, "default expired error", e.wantStatus(a.ID, task.Failed).Error, task.ExpiredErrorJSON)
	if _, err := e.s.ExpireAndPurge(e.ctx, e.clock.Now(), task.SweepOptions{ExpiredError: json.RawMessage(`"x"`)}); err == nil {
		t.Fatalf("ExpireAndPurge accepted a non-object error")
	}
}

func testStatusMessage(t *testing.T, e *env) {
	r := e.create(task.NewTask{})
	c := e.claimID(r.ID, "w", time.Minute)
	e.clock.Advance(time.Second)
	if err := e.s.SetStatusMessage(e.ctx, r.ID, c.Fence, "50% done"); err != nil {
		t.Fatalf("SetStatusMessage: %v", err)
	}
	got := e.get(r.ID)
	if got.StatusMessage != "50% done" || !got.UpdatedAt.After(r.UpdatedAt) {
		t.Fatalf("status message %q updated %v; want 50%% done, after %v", got.StatusMessage, got.UpdatedAt, r.UpdatedAt)
	}
	err := e.s.SetStatusMessage(e.ctx, r.ID, c.Fence-1, "stale")
	wantErr(t, "SetStatusMessage with a stale fence", err, task.ErrLeaseLost)
	e.finish(c, task.Complete(json.RawMessage(`{}`)))
	err = e.s.SetStatusMessage(e.ctx, r.ID, c.Fence, "after the end")
	wantErr(t, "SetStatusMessage after Finish", err, task.ErrLeaseLost)
	if got := e.get(r.ID); got.StatusMessage != "" {
		t.Fatalf("status message after completion = %q, want the outcome's (empty)", got.StatusMessage)
	}
}

// events collects bus events of one channel.
type events struct {
	t  *testing.T
	ch <-chan string
}

func (e *env) listen(channel string) *events {
	e.t.Helper()
	ch, err := e.s.Subscribe(e.ctx, channel)
	if err != nil {
		e.t.Fatalf("Subscribe(%s): %v", channel, err)
	}
	return &events{t: e.t, ch: ch}
}

// expect waits for payload, skipping others.
func (ev *events) expect(payload string) {
	ev.t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case got, ok := <-ev.ch:
			if !ok {
				ev.t.Fatalf("subscription closed while waiting for %q", payload)
			}
			if got == payload {
				return
			}
		case <-timeout:
			ev.t.Fatalf("no event %q within 10s", payload)
		}
	}
}

// none checks that no event is pending after the producer finished (events
// for one task are published in order, so a later expected event proves an
// earlier unexpected one would have arrived already).
func (ev *events) none(what string) {
	ev.t.Helper()
	select {
	case got := <-ev.ch:
		ev.t.Fatalf("unexpected event %q (%s)", got, what)
	default:
	}
}

func testNotifications(t *testing.T, e *env) {
	changed := e.listen(task.ChannelChanged)
	runnable := e.listen(task.ChannelRunnable)
	cancels := e.listen(task.ChannelCancel)

	r := e.create(task.NewTask{})
	changed.expect(r.ID)
	runnable.expect(r.ID)
	c := e.claimID(r.ID, "w", time.Minute)
	if err := e.s.SetStatusMessage(e.ctx, r.ID, c.Fence, "step 1"); err != nil {
		t.Fatal(err)
	}
	changed.expect(r.ID)
	runnable.none("claim and progress")
	e.finish(c, task.NeedInput(json.RawMessage(`{"a":{},"b":{}}`), nil))
	changed.expect(r.ID)
	e.submit(r.ID, `{"a":1}`)
	changed.expect(r.ID)
	runnable.none("partial input")
	e.submit(r.ID, `{"b":2}`)
	changed.expect(r.ID)
	runnable.expect(r.ID)
	e.claimID(r.ID, "w", time.Minute)
	if _, err := e.s.RequestCancel(e.ctx, r.ID); err != nil {
		t.Fatal(err)
	}
	cancels.expect(r.ID)

	// Subscriptions end with their context.
	ctx, cancel := context.WithCancel(e.ctx)
	ch, err := e.s.Subscribe(ctx, task.ChannelChanged)
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	waitClosed(t, ch)
}

func waitClosed(t *testing.T, ch <-chan string) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case _, ok := <-ch:
			if !ok {
				return
			}
		case <-timeout:
			t.Fatalf("subscription not closed within 10s of its context ending")
		}
	}
}

func testBus(t *testing.T, e *env) {
	a1 := e.listen("app.events")
	a2 := e.listen("app.events")
	other := e.listen("app.other")
	payloads := []string{"hello", "", "multi\nline", strings.Repeat("x", 4000), `{"json":true}`}
	for _, p := range payloads {
		if err := e.s.Publish(e.ctx, "app.events", p); err != nil {
			t.Fatalf("Publish(%q): %v", p, err)
		}
	}
	for _, p := range payloads {
		a1.expect(p)
		a2.expect(p)
	}
	if err := e.s.Publish(e.ctx, "app.other", "done"); err != nil {
		t.Fatal(err)
	}
	other.expect("done")
	for _, bad := range []string{"", "a\nb", strings.Repeat("c", task.MaxChannelLen+1)} {
		if err := e.s.Publish(e.ctx, bad, "x"); err == nil {
			t.Fatalf("Publish on channel %q: want error", bad)
		}
		if _, err := e.s.Subscribe(e.ctx, bad); err == nil {
			t.Fatalf("Subscribe to channel %q: want error", bad)
		}
	}
}
