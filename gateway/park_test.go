package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/weftmcp/weft/client"
	"github.com/weftmcp/weft/exactjson"
	"github.com/weftmcp/weft/sessionstore"
)

// severable is the store as one gateway instance sees it: cut, the
// instance is gone (a crash, a kill) and can no longer touch the store,
// so it cannot remove its records either.
type severable struct {
	sessionstore.Store
	cut atomic.Bool
}

var errSevered = errors.New("the instance is gone")

func (s *severable) Create(ctx context.Context, x *sessionstore.Session) error {
	if s.cut.Load() {
		return errSevered
	}
	return s.Store.Create(ctx, x)
}

func (s *severable) Get(ctx context.Context, id string) (*sessionstore.Session, error) {
	if s.cut.Load() {
		return nil, errSevered
	}
	return s.Store.Get(ctx, id)
}

func (s *severable) Delete(ctx context.Context, id string) (bool, error) {
	if s.cut.Load() {
		return false, errSevered
	}
	return s.Store.Delete(ctx, id)
}

func (s *severable) Deliver(ctx context.Context, id, req string, msg []byte) (bool, error) {
	if s.cut.Load() {
		return false, errSevered
	}
	return s.Store.Deliver(ctx, id, req, msg)
}

const testLease = 3 * time.Second

// askThenWork is an upstream call that asks for a form, then, answered,
// either returns the answer (work == false) or works until cancelled.
func askThenWork(work bool, cancelled *atomic.Bool) func(ctx context.Context, s *sink) (exactjson.Value, error) {
	return func(ctx context.Context, s *sink) (exactjson.Value, error) {
		v, rerr := s.request(ctx, "elicitation/create", exactjson.Object(
			exactjson.Field("mode", exactjson.String("form")),
			exactjson.Field("message", exactjson.String("go?")),
			exactjson.Field("requestedSchema", exactjson.Object(exactjson.Field("type", exactjson.String("object")),
				exactjson.Field("properties", exactjson.Object())))))
		if rerr != nil {
			return exactjson.Value{}, rerr
		}
		if !work {
			return v, nil
		}
		<-ctx.Done()
		cancelled.Store(true)
		return exactjson.Value{}, ctx.Err()
	}
}

// parkOne starts a call on p and returns its id and the key of its input
// request, once it is parked.
func parkOne(t *testing.T, p *parker, do func(context.Context, *sink) (exactjson.Value, error)) (id, key string) {
	t.Helper()
	pc, err := p.start(parkOpts{digest: "digest"}, do)
	if err != nil {
		t.Fatal(err)
	}
	o, err := pc.awaitFirst(t.Context())
	if err != nil || o.requests.Len() != 1 {
		t.Fatalf("first outcome %+v, %v", o, err)
	}
	return pc.id, o.requests.Members()[0].Name
}

func accepted(key string) exactjson.Value {
	return exactjson.Object(exactjson.Field(key, exactjson.Object(exactjson.Field("action", exactjson.String("accept")),
		exactjson.Field("content", exactjson.Object()))))
}

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

// A parked call whose client takes many leases to retry stays: its
// instance renews its record.
func TestParkedCallOutlivesManyLeases(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := sessionstore.NewMemory(nil)
		owner := newParker(store, InputConfig{Lease: Duration(testLease)}, quiet())
		defer owner.close()
		other := newParker(store, InputConfig{Lease: Duration(testLease)}, quiet())
		defer other.close()
		id, key := parkOne(t, owner, askThenWork(false, nil))
		time.Sleep(10 * testLease)
		o, err := other.resume(t.Context(), id, 0, accepted(key), nil)
		if err != nil || o.result.IsNull() {
			t.Fatalf("retry after 10 leases: %+v, %v", o, err)
		}
	})
}

// The instance holding a parked call dies while the retry waits on another
// instance: the retry learns it within a lease, not at its own timeout,
// and the owner's upstream call is cancelled.
func TestParkedCallOwnerDiesDuringRetry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := sessionstore.NewMemory(nil)
		ownerStore := &severable{Store: store}
		owner := newParker(ownerStore, InputConfig{Lease: Duration(testLease)}, quiet())
		other := newParker(store, InputConfig{Lease: Duration(testLease)}, quiet())
		defer other.close()
		var cancelled atomic.Bool
		id, key := parkOne(t, owner, askThenWork(true, &cancelled))
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute) // the upstream's callTimeout
		defer cancel()
		type result struct {
			o   outcome
			err error
			at  time.Time
		}
		done := make(chan result, 1)
		go func() {
			o, err := other.resume(ctx, id, 0, accepted(key), nil)
			done <- result{o, err, time.Now()}
		}()
		synctest.Wait() // the answer reached the upstream, which works; the retry waits
		select {
		case r := <-done:
			t.Fatalf("the retry ended before the owner died: %+v", r)
		default:
		}
		died := time.Now()
		ownerStore.cut.Store(true)
		owner.close()
		if !cancelled.Load() {
			t.Error("the owner's upstream call was not cancelled")
		}
		r := <-done
		if !errors.Is(r.err, errParkedGone) {
			t.Fatalf("retry = %+v, %v; want errParkedGone", r.o, r.err)
		}
		if waited := r.at.Sub(died); waited > testLease {
			t.Fatalf("the retry waited %s after the owner died, more than the lease (%s)", waited, testLease)
		}
	})
}

// A retry arriving after the instance holding the call died finds the
// record gone at once.
func TestParkedCallOwnerDiedBeforeRetry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := sessionstore.NewMemory(nil)
		ownerStore := &severable{Store: store}
		owner := newParker(ownerStore, InputConfig{Lease: Duration(testLease)}, quiet())
		other := newParker(store, InputConfig{Lease: Duration(testLease)}, quiet())
		defer other.close()
		id, key := parkOne(t, owner, askThenWork(false, nil))
		ownerStore.cut.Store(true)
		owner.close()
		time.Sleep(testLease)
		start := time.Now()
		_, err := other.resume(t.Context(), id, 0, accepted(key), nil)
		if !errors.Is(err, errParkedGone) || time.Since(start) != 0 {
			t.Fatalf("retry = %v after %s; want errParkedGone at once", err, time.Since(start))
		}
	})
}

// A record that lapsed while its instance lives (the instance stalled
// longer than the lease, or the record was removed) ends its call: a retry
// may have been told the call is gone.
func TestParkedCallRecordLapsed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := sessionstore.NewMemory(nil)
		owner := newParker(store, InputConfig{Lease: Duration(testLease)}, quiet())
		defer owner.close()
		var cancelled atomic.Bool
		id, key := parkOne(t, owner, askThenWork(true, &cancelled))
		// Answer the call (it works on) through the mailbox, as a retry
		// would, then remove its record behind the owner's back.
		ctx, cancel := context.WithCancel(t.Context())
		go func() { _, _ = owner.resume(ctx, id, 0, accepted(key), nil) }()
		synctest.Wait()
		if _, err := store.Delete(t.Context(), id); err != nil {
			t.Fatal(err)
		}
		cancel()
		time.Sleep(testLease)
		synctest.Wait()
		if !cancelled.Load() || owner.active.Load() != 0 {
			t.Fatalf("the call runs on (cancelled %v, %d active)", cancelled.Load(), owner.active.Load())
		}
	})
}

// A local failure crosses the mailbox (encode, decode) with its message as
// written and its kind, without the kind's text twice.
func TestOutcomeFailureRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		kind error
	}{
		{"closed", fmt.Errorf("%w: upstream %q: the server closed its output", errUpstreamClosed, "up"), errUpstreamClosed},
		{"timeout", fmt.Errorf("no answer within 1m0s: %w", context.DeadlineExceeded), context.DeadlineExceeded},
		{"protocol", fmt.Errorf("upstream %q sent too much: %w", "up", client.ErrProtocol), client.ErrProtocol},
		{"other", errors.New("cannot park the call: disk full"), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, err := decodeOutcome(failOf(tc.err).encode())
			if err != nil {
				t.Fatal(err)
			}
			got := o.error()
			if got.Error() != tc.err.Error() {
				t.Errorf("message %q, want %q", got, tc.err)
			}
			if tc.kind != nil && !errors.Is(got, tc.kind) {
				t.Errorf("%v is not %v", got, tc.kind)
			}
		})
	}
}
