// Package storetest is the contract test suite of sessionstore.Store
// implementations.
package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/weftmcp/weft/sessionstore"
)

// Clock is a manual clock shared by the stores under test.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock returns a clock at a fixed instant.
func NewClock() *Clock {
	return &Clock{t: time.Date(2026, 8, 1, 12, 0, 0, 0, time.UTC)}
}

// Now returns the current instant.
func (c *Clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

// Advance moves the clock forward.
func (c *Clock) Advance(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

// Factory returns two stores sharing one backend (the same store twice is
// fine for a process-local store), both reading clock.
type Factory func(t *testing.T, clock *Clock, limits sessionstore.Limits) (a, b sessionstore.Store)

// Run runs the contract suite.
func Run(t *testing.T, newStores Factory) {
	t.Run("CreateGet", func(t *testing.T) { testCreateGet(t, newStores) })
	t.Run("Expiry", func(t *testing.T) { testExpiry(t, newStores) })
	t.Run("Update", func(t *testing.T) { testUpdate(t, newStores) })
	t.Run("Delete", func(t *testing.T) { testDelete(t, newStores) })
	t.Run("Limits", func(t *testing.T) { testLimits(t, newStores) })
	t.Run("DefaultPerIdentity", func(t *testing.T) { testDefaultPerIdentity(t, newStores) })
	t.Run("OwnerAndPartition", func(t *testing.T) { testOwnerAndPartition(t, newStores) })
	t.Run("EvictWhenFull", func(t *testing.T) { testEvictWhenFull(t, newStores) })
	t.Run("Mailbox", func(t *testing.T) { testMailbox(t, newStores) })
	t.Run("MailboxCancel", func(t *testing.T) { testMailboxCancel(t, newStores) })
	t.Run("MailboxSessionExpiry", func(t *testing.T) { testMailboxSessionExpiry(t, newStores) })
}

// NewSession returns a valid session created at clock's now.
func NewSession(clock *Clock, id, identity string) *sessionstore.Session {
	now := clock.Now()
	return &sessionstore.Session{
		ID:                 id,
		ProtocolVersion:    "2025-11-25",
		ClientCapabilities: []byte(`{"elicitation":{},"sampling":{}}`),
		ClientInfo:         []byte(`{"name":"c","version":"1"}`),
		IdentityDigest:     identity,
		CreatedAt:          now,
		LastSeen:           now,
		IdleTimeout:        10 * time.Minute,
		ExpiresAt:          now.Add(time.Hour),
	}
}

func mustCreate(t *testing.T, s sessionstore.Store, sess *sessionstore.Session) {
	t.Helper()
	if err := s.Create(context.Background(), sess); err != nil {
		t.Fatalf("Create(%s): %v", sess.ID, err)
	}
}

func wantNotFound(t *testing.T, s sessionstore.Store, id string) {
	t.Helper()
	if got, err := s.Get(context.Background(), id); !errors.Is(err, sessionstore.ErrNotFound) {
		t.Fatalf("Get(%s) = %v, %v; want ErrNotFound", id, got, err)
	}
}

func testCreateGet(t *testing.T, newStores Factory) {
	clock := NewClock()
	a, b := newStores(t, clock, sessionstore.Limits{})
	ctx := context.Background()
	in := NewSession(clock, "sess-1", "ident-a")
	in.Subscriptions = []string{"test://x"}
	in.LogLevel = "info"
	mustCreate(t, a, in)
	got, err := b.Get(ctx, "sess-1")
	if err != nil {
		t.Fatalf("Get from the other instance: %v", err)
	}
	if got.ID != in.ID || got.ProtocolVersion != in.ProtocolVersion || string(got.ClientCapabilities) != string(in.ClientCapabilities) ||
		string(got.ClientInfo) != string(in.ClientInfo) || got.IdentityDigest != in.IdentityDigest || got.LogLevel != "info" ||
		!slices.Equal(got.Subscriptions, in.Subscriptions) || got.IdleTimeout != in.IdleTimeout ||
		!got.ExpiresAt.Equal(in.ExpiresAt) || !got.CreatedAt.Equal(in.CreatedAt) {
		t.Fatalf("Get = %+v, want %+v", got, in)
	}
	// The copy is private.
	got.Subscriptions[0] = "changed"
	again, _ := a.Get(ctx, "sess-1")
	if again.Subscriptions[0] != "test://x" {
		t.Fatal("Get returned a shared slice")
	}
	if err := b.Create(ctx, NewSession(clock, "sess-1", "ident-b")); !errors.Is(err, sessionstore.ErrExists) {
		t.Fatalf("duplicate Create = %v, want ErrExists", err)
	}
	wantNotFound(t, a, "nope")
	if err := a.Create(ctx, &sessionstore.Session{ID: "x"}); !errors.Is(err, sessionstore.ErrInvalid) {
		t.Fatalf("invalid Create = %v, want ErrInvalid", err)
	}
}

func testExpiry(t *testing.T, newStores Factory) {
	clock := NewClock()
	a, b := newStores(t, clock, sessionstore.Limits{})
	ctx := context.Background()
	mustCreate(t, a, NewSession(clock, "idle", "i"))
	mustCreate(t, a, NewSession(clock, "busy", "i"))
	// Use "busy" every 6 minutes: it survives past the idle timeout.
	for range 3 {
		clock.Advance(6 * time.Minute)
		if _, err := b.Get(ctx, "busy"); err != nil {
			t.Fatalf("busy session expired early: %v", err)
		}
	}
	wantNotFound(t, a, "idle")
	if _, err := b.Update(ctx, "idle", func(*sessionstore.Session) error { return nil }); !errors.Is(err, sessionstore.ErrNotFound) {
		t.Fatalf("Update of an idle-expired session = %v", err)
	}
	// The absolute expiry ends even a busy session.
	for range 8 {
		clock.Advance(6 * time.Minute)
		_, _ = a.Get(ctx, "busy")
	}
	wantNotFound(t, b, "busy")
	// An expired id can be reused.
	mustCreate(t, b, NewSession(clock, "idle", "i"))
}

func testUpdate(t *testing.T, newStores Factory) {
	clock := NewClock()
	a, b := newStores(t, clock, sessionstore.Limits{})
	ctx := context.Background()
	mustCreate(t, a, NewSession(clock, "u", "i"))
	got, err := b.Update(ctx, "u", func(s *sessionstore.Session) error {
		s.LogLevel = "debug"
		s.Initialized = true
		s.Subscriptions = append(s.Subscriptions, "test://a")
		s.ProtocolVersion = "ignored"
		s.IdentityDigest = "ignored"
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got.LogLevel != "debug" || !got.Initialized || !slices.Equal(got.Subscriptions, []string{"test://a"}) {
		t.Fatalf("Update result %+v", got)
	}
	back, _ := a.Get(ctx, "u")
	if back.LogLevel != "debug" || !back.Initialized || back.ProtocolVersion != "2025-11-25" || back.IdentityDigest != "i" {
		t.Fatalf("stored after Update: %+v", back)
	}
	boom := errors.New("boom")
	if _, err := a.Update(ctx, "u", func(s *sessionstore.Session) error { s.LogLevel = "error"; return boom }); !errors.Is(err, boom) {
		t.Fatalf("Update with a failing fn = %v", err)
	}
	if back, _ := b.Get(ctx, "u"); back.LogLevel != "debug" {
		t.Fatalf("a failed Update changed the session: %+v", back)
	}
	// Concurrent updates from both instances serialize: no lost update.
	var wg sync.WaitGroup
	const n = 20
	for i := range n {
		st := a
		if i%2 == 1 {
			st = b
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := st.Update(ctx, "u", func(s *sessionstore.Session) error {
				s.Subscriptions = append(s.Subscriptions, fmt.Sprintf("test://%d", i))
				return nil
			}); err != nil {
				t.Errorf("concurrent Update: %v", err)
			}
		}()
	}
	wg.Wait()
	final, _ := a.Get(ctx, "u")
	if len(final.Subscriptions) != n+1 {
		t.Fatalf("lost updates: %d subscriptions, want %d", len(final.Subscriptions), n+1)
	}
	wantNotFound(t, a, "missing")
	if _, err := a.Update(ctx, "missing", func(*sessionstore.Session) error { return nil }); !errors.Is(err, sessionstore.ErrNotFound) {
		t.Fatalf("Update(missing) = %v", err)
	}
}

func testDelete(t *testing.T, newStores Factory) {
	clock := NewClock()
	a, b := newStores(t, clock, sessionstore.Limits{})
	ctx := context.Background()
	mustCreate(t, a, NewSession(clock, "d", "i"))
	if ok, err := b.Delete(ctx, "d"); !ok || err != nil {
		t.Fatalf("Delete = %v, %v", ok, err)
	}
	wantNotFound(t, a, "d")
	if ok, err := a.Delete(ctx, "d"); ok || err != nil {
		t.Fatalf("second Delete = %v, %v", ok, err)
	}
}

func testLimits(t *testing.T, newStores Factory) {
	clock := NewClock()
	a, b := newStores(t, clock, sessionstore.Limits{MaxSessions: 3, MaxPerIdentity: 2})
	ctx := context.Background()
	mustCreate(t, a, NewSession(clock, "l1", "x"))
	mustCreate(t, b, NewSession(clock, "l2", "x"))
	if err := a.Create(ctx, NewSession(clock, "l3", "x")); !errors.Is(err, sessionstore.ErrLimit) {
		t.Fatalf("third session of one identity = %v, want ErrLimit", err)
	}
	mustCreate(t, a, NewSession(clock, "l3", "y"))
	if err := b.Create(ctx, NewSession(clock, "l4", "z")); !errors.Is(err, sessionstore.ErrLimit) {
		t.Fatalf("fourth session = %v, want ErrLimit", err)
	}
	// Deleted and expired sessions do not count.
	if _, err := a.Delete(ctx, "l1"); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, b, NewSession(clock, "l4", "z"))
	clock.Advance(11 * time.Minute)
	for i := range 3 {
		mustCreate(t, a, NewSession(clock, fmt.Sprintf("m%d", i), fmt.Sprintf("id%d", i)))
	}
}

// With zero Limits, one identity cannot take more than
// DefaultMaxPerIdentity sessions: another identity still gets one.
func testDefaultPerIdentity(t *testing.T, newStores Factory) {
	clock := NewClock()
	a, b := newStores(t, clock, sessionstore.Limits{})
	ctx := context.Background()
	var err error
	n := 0
	for ; n <= sessionstore.DefaultMaxSessions; n++ {
		if err = a.Create(ctx, NewSession(clock, fmt.Sprintf("flood-%d", n), "flooder")); err != nil {
			break
		}
	}
	if !errors.Is(err, sessionstore.ErrLimit) || n != sessionstore.DefaultMaxPerIdentity {
		t.Fatalf("one identity created %d sessions, then %v; want %d, then ErrLimit", n, err, sessionstore.DefaultMaxPerIdentity)
	}
	mustCreate(t, b, NewSession(clock, "victim", "victim"))
}

// Owner (not IdentityDigest) is what the per-identity bound counts, and
// Partition what the per-partition bound counts; sessions without a
// partition are not counted by it.
func testOwnerAndPartition(t *testing.T, newStores Factory) {
	clock := NewClock()
	a, b := newStores(t, clock, sessionstore.Limits{MaxPerIdentity: 1, MaxPerPartition: 2})
	ctx := context.Background()
	sess := func(id, owner, partition string) *sessionstore.Session {
		s := NewSession(clock, id, "anonymous")
		s.Owner, s.Partition = owner, partition
		return s
	}
	mustCreate(t, a, sess("o1", "addr-1", ""))
	mustCreate(t, b, sess("o2", "addr-2", "")) // same IdentityDigest, another owner
	if err := a.Create(ctx, sess("o3", "addr-1", "")); !errors.Is(err, sessionstore.ErrLimit) {
		t.Fatalf("a second session of one owner past MaxPerIdentity 1 = %v, want ErrLimit", err)
	}
	got, err := b.Get(ctx, "o2")
	if err != nil || got.Owner != "addr-2" || got.Partition != "" {
		t.Fatalf("Get = %+v, %v; want owner addr-2, no partition", got, err)
	}
	mustCreate(t, a, sess("p1", "u1", "tenant-a"))
	mustCreate(t, b, sess("p2", "u2", "tenant-a"))
	if err := a.Create(ctx, sess("p3", "u3", "tenant-a")); !errors.Is(err, sessionstore.ErrLimit) {
		t.Fatalf("a third session of one partition past MaxPerPartition 2 = %v, want ErrLimit", err)
	}
	mustCreate(t, b, sess("p4", "u4", "tenant-b"))
	mustCreate(t, a, sess("p5", "u5", "")) // no partition: not counted
	// Without Owner the identity digest is the owner.
	mustCreate(t, a, NewSession(clock, "d1", "ident"))
	if got, err := b.Get(ctx, "d1"); err != nil || got.Owner != "ident" {
		t.Fatalf("Get = %+v, %v; want owner = identity digest", got, err)
	}
	if err := b.Create(ctx, NewSession(clock, "d2", "ident")); !errors.Is(err, sessionstore.ErrLimit) {
		t.Fatalf("a second session of one identity = %v, want ErrLimit", err)
	}
}

// A full store with EvictWhenFull makes room by evicting the least
// recently used session of the owner holding the most, and refuses only
// that owner; without it a full store refuses everyone.
func testEvictWhenFull(t *testing.T, newStores Factory) {
	clock := NewClock()
	a, b := newStores(t, clock, sessionstore.Limits{MaxSessions: 4, MaxPerIdentity: 4, EvictWhenFull: true})
	ctx := context.Background()
	for i := range 4 {
		mustCreate(t, a, NewSession(clock, fmt.Sprintf("x%d", i), "x"))
		clock.Advance(time.Second)
	}
	if _, err := b.Get(ctx, "x0"); err != nil { // x1 is now the least recently used
		t.Fatal(err)
	}
	if err := a.Create(ctx, NewSession(clock, "x4", "x")); !errors.Is(err, sessionstore.ErrLimit) {
		t.Fatalf("the owner holding the most, in a full store = %v, want ErrLimit", err)
	}
	mustCreate(t, b, NewSession(clock, "y0", "y"))
	wantNotFound(t, a, "x1")
	for _, id := range []string{"x0", "x2", "x3", "y0"} {
		if _, err := a.Get(ctx, id); err != nil {
			t.Fatalf("Get(%s) after the eviction: %v", id, err)
		}
	}
	mustCreate(t, a, NewSession(clock, "y1", "y")) // x holds 3 > 1: evicts x again
	if err := b.Create(ctx, NewSession(clock, "y2", "y")); !errors.Is(err, sessionstore.ErrLimit) {
		t.Fatalf("2 + 2 sessions, the third of y = %v, want ErrLimit", err)
	}
	mustCreate(t, b, NewSession(clock, "z0", "z")) // a newcomer still gets in

	clock2 := NewClock()
	c, _ := newStores(t, clock2, sessionstore.Limits{MaxSessions: 2, MaxPerIdentity: 2})
	mustCreate(t, c, NewSession(clock2, "k0", "k"))
	mustCreate(t, c, NewSession(clock2, "k1", "k"))
	if err := c.Create(ctx, NewSession(clock2, "v0", "v")); !errors.Is(err, sessionstore.ErrLimit) {
		t.Fatalf("a full store without EvictWhenFull = %v, want ErrLimit", err)
	}
}

func testMailbox(t *testing.T, newStores Factory) {
	clock := NewClock()
	a, b := newStores(t, clock, sessionstore.Limits{MaxPendingAnswers: 2})
	ctx := context.Background()
	mustCreate(t, a, NewSession(clock, "m", "i"))
	far := clock.Now().Add(time.Hour)
	if err := a.Expect(ctx, "nope", "r0", far); !errors.Is(err, sessionstore.ErrNotFound) {
		t.Fatalf("Expect on a missing session = %v", err)
	}
	// Delivered before anyone waits.
	if err := a.Expect(ctx, "m", "r1", far); err != nil {
		t.Fatal(err)
	}
	if ok, err := b.Deliver(ctx, "m", "r1", []byte(`{"jsonrpc":"2.0","id":"r1","result":{}}`)); !ok || err != nil {
		t.Fatalf("Deliver = %v, %v", ok, err)
	}
	if ok, _ := b.Deliver(ctx, "m", "r1", []byte(`{}`)); ok {
		t.Fatal("a second answer was accepted")
	}
	got, err := a.Await(ctx, "m", "r1")
	if err != nil || string(got) != `{"jsonrpc":"2.0","id":"r1","result":{}}` {
		t.Fatalf("Await = %s, %v", got, err)
	}
	if ok, _ := b.Deliver(ctx, "m", "r1", []byte(`{}`)); ok {
		t.Fatal("an answer after Await was accepted")
	}
	// Unsolicited answers are dropped.
	if ok, err := b.Deliver(ctx, "m", "never-issued", []byte(`{}`)); ok || err != nil {
		t.Fatalf("unsolicited Deliver = %v, %v", ok, err)
	}
	// Delivered while waiting, from the other instance.
	if err := a.Expect(ctx, "m", "r2", far); err != nil {
		t.Fatal(err)
	}
	if err := a.Expect(ctx, "m", "r3", far); err != nil {
		t.Fatal(err)
	}
	if err := a.Expect(ctx, "m", "r4", far); !errors.Is(err, sessionstore.ErrLimit) {
		t.Fatalf("Expect beyond MaxPendingAnswers = %v", err)
	}
	done := make(chan []byte, 1)
	go func() {
		msg, err := a.Await(ctx, "m", "r2")
		if err != nil {
			t.Errorf("Await r2: %v", err)
		}
		done <- msg
	}()
	time.Sleep(50 * time.Millisecond)
	if ok, err := b.Deliver(ctx, "m", "r2", []byte(`"two"`)); !ok || err != nil {
		t.Fatalf("Deliver r2 = %v, %v", ok, err)
	}
	select {
	case msg := <-done:
		if string(msg) != `"two"` {
			t.Fatalf("Await r2 = %s", msg)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the waiter was not woken")
	}
	// Deleting the session ends its waiters.
	errc := make(chan error, 1)
	go func() { _, err := a.Await(ctx, "m", "r3"); errc <- err }()
	time.Sleep(50 * time.Millisecond)
	if _, err := b.Delete(ctx, "m"); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errc:
		if !errors.Is(err, sessionstore.ErrNotFound) {
			t.Fatalf("Await after Delete = %v, want ErrNotFound", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Delete did not end the waiter")
	}
}

func testMailboxCancel(t *testing.T, newStores Factory) {
	clock := NewClock()
	a, b := newStores(t, clock, sessionstore.Limits{})
	mustCreate(t, a, NewSession(clock, "c", "i"))
	if err := a.Expect(context.Background(), "c", "r", clock.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := a.Await(ctx, "c", "r"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Await with an ending context = %v", err)
	}
	if ok, _ := b.Deliver(context.Background(), "c", "r", []byte(`{}`)); ok {
		t.Fatal("the slot outlived its waiter")
	}
	// A slot past its expiry takes no answer.
	if err := a.Expect(context.Background(), "c", "late", clock.Now().Add(-time.Second)); err != nil {
		t.Fatal(err)
	}
	if ok, _ := b.Deliver(context.Background(), "c", "late", []byte(`{}`)); ok {
		t.Fatal("an expired slot took an answer")
	}
}

// A waiter whose session expires while it waits ends with ErrNotFound,
// whether the session idled out (nobody else touches it: the store itself
// must notice) or reached its absolute expiry; a session kept in use keeps
// its waiter; an answer delivered before the expiry is still taken.
func testMailboxSessionExpiry(t *testing.T, newStores Factory) {
	for _, tc := range []struct {
		name string
		// use: the session is used every 6 minutes until its absolute
		// expiry (an hour), past its idle timeout (10 minutes).
		use     bool
		advance time.Duration
		deliver bool // the answer arrives before the expiry
		want    error
	}{
		{name: "idle", advance: 11 * time.Minute, want: sessionstore.ErrNotFound},
		{name: "absolute", use: true, advance: 61 * time.Minute, want: sessionstore.ErrNotFound},
		{name: "answered before the expiry", advance: 11 * time.Minute, deliver: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := NewClock()
			a, b := newStores(t, clock, sessionstore.Limits{})
			ctx := context.Background()
			mustCreate(t, a, NewSession(clock, "x", "i"))
			if err := a.Expect(ctx, "x", "r", clock.Now().Add(2*time.Hour)); err != nil {
				t.Fatal(err)
			}
			if tc.deliver {
				if ok, err := b.Deliver(ctx, "x", "r", []byte(`"late"`)); !ok || err != nil {
					t.Fatalf("Deliver = %v, %v", ok, err)
				}
			}
			type result struct {
				msg []byte
				err error
			}
			done := make(chan result, 1)
			go func() { msg, err := a.Await(ctx, "x", "r"); done <- result{msg, err} }()
			for elapsed := time.Duration(0); elapsed < tc.advance; {
				step := min(6*time.Minute, tc.advance-elapsed)
				clock.Advance(step)
				elapsed += step
				if tc.use && elapsed < time.Hour {
					if _, err := b.Get(ctx, "x"); err != nil {
						t.Fatalf("Get after %s: %v", elapsed, err)
					}
				}
			}
			select {
			case r := <-done:
				if !errors.Is(r.err, tc.want) || (tc.want == nil && string(r.msg) != `"late"`) {
					t.Fatalf("Await = %s, %v; want %v", r.msg, r.err, tc.want)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the waiter did not notice its session's expiry")
			}
		})
	}
}
