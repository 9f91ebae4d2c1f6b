package weft

import (
	"context"
	"net/http"
	"sync"
	"testing"

	"github.com/weftmcp/weft/sessionstore"
	"github.com/weftmcp/weft/task"
)

// addBlocking registers "block": it reports each start on started and
// waits until its context ends, reporting that on cancelled, as
// "<client name>:<request id>".
func addBlocking(t testing.TB, s *Server, started, cancelled chan<- string) {
	t.Helper()
	must(t, s.AddTool(Tool{Name: "block", Description: "Blocks until cancelled."},
		func(ctx context.Context, req *Request) (*CallToolResult, error) {
			si, _ := SessionFromContext(ctx)
			name, _ := si.ClientInfo.Get("name")
			who, _ := name.AsString()
			started <- who + ":" + req.ID.String()
			<-ctx.Done()
			cancelled <- who + ":" + req.ID.String()
			return nil, ctx.Err()
		}))
}

// TestLegacyCancel: notifications/cancelled and DELETE cancel a running
// call of the session, on one instance and, through Options.Events, on
// another; a cancellation from another session cancels nothing of this one.
func TestLegacyCancel(t *testing.T) {
	sessions := sessionstore.NewMemory(nil)
	events := task.NewMemoryStore(nil)
	started, cancelled := make(chan string, 8), make(chan string, 8)
	var urls []string
	for range 2 {
		s, _ := legacyServerFor(t, &Options{Events: events, Legacy: LegacyOptions{Store: sessions}})
		addBlocking(t, s, started, cancelled)
		urls = append(urls, startHTTP(t, s).URL)
		t.Cleanup(func() { _ = s.Shutdown(context.Background()) })
	}
	// Two sessions, each with a client per instance.
	type session struct{ a, b *legacyClient }
	open := func(name string) session {
		a := newLegacyClient(t, urls[0])
		a.name = name
		a.initialize()
		b := newLegacyClient(t, urls[1])
		b.sid, b.version = a.sid, a.version
		return session{a, b}
	}
	alice, bob := open("alice"), open("bob")
	var calls sync.WaitGroup
	defer calls.Wait() // every call's response stream ends once it is cancelled
	run := func(cl *legacyClient, id int) {
		calls.Go(func() { cl.send(body(t, id, "tools/call", M{"name": "block"}), nil) })
		want := cl.name + ":" + itoa(id)
		if got := waitFor(t, started, "the call to start"); got != want {
			t.Fatalf("started %s, want %s", got, want)
		}
	}
	cancel := func(cl *legacyClient, id int) {
		if r := cl.send(body(t, nil, "notifications/cancelled", M{"requestId": id, "reason": "test"}), nil); r.Status != http.StatusAccepted {
			t.Fatalf("notifications/cancelled: %v", r)
		}
	}
	expect := func(want, what string) {
		t.Helper()
		if got := waitFor(t, cancelled, what); got != want {
			t.Fatalf("cancelled %s, want %s", got, want)
		}
	}

	// On the instance running the call.
	run(alice.a, 1)
	cancel(alice.a, 1)
	expect("alice:1", "the call to be cancelled")
	// From the other instance, through the fleet bus: both sessions run a
	// call with id 2 on instance A, and bob's cancellation, sent to B,
	// cancels bob's call only.
	run(alice.a, 2)
	run(bob.a, 2)
	cancel(bob.b, 2)
	expect("bob:2", "bob's call to be cancelled from the other instance")
	cancel(alice.b, 2)
	expect("alice:2", "alice's call to be cancelled from the other instance")
	// DELETE on the other instance ends the session's calls on A too.
	run(alice.a, 3)
	if r := alice.b.raw(http.MethodDelete, nil); r.Status != http.StatusNoContent {
		t.Fatalf("DELETE: %v", r)
	}
	expect("alice:3", "the call to end with its session")
	select {
	case id := <-cancelled:
		t.Fatalf("call %s was cancelled too", id)
	default:
	}
}
