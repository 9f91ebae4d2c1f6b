package weft

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/weftmcp/weft/exactjson"
	"github.com/weftmcp/weft/task"
)

func TestExtensionState(t *testing.T) {
	type keyA struct{}
	type keyB struct{}
	a, err := NewServer(Implementation{Name: "a", Version: "1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewServer(Implementation{Name: "b", Version: "1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var created atomic.Int32
	mk := func() any { created.Add(1); return new(int) }
	var wg sync.WaitGroup
	got := make([]any, 16)
	for i := range got {
		wg.Go(func() { got[i] = a.ExtensionState(keyA{}, mk) })
	}
	wg.Wait()
	for _, v := range got {
		if v != got[0] {
			t.Fatal("one server and key gave two values")
		}
	}
	if created.Load() != 1 {
		t.Fatalf("create ran %d times, want 1", created.Load())
	}
	if a.ExtensionState(keyB{}, mk) == got[0] {
		t.Error("another key shared the value")
	}
	if b.ExtensionState(keyA{}, mk) == got[0] {
		t.Error("another server shared the value")
	}
	if created.Load() != 3 {
		t.Fatalf("create ran %d times, want 3", created.Load())
	}
}

// discoveredExtensions returns the extension ids server/discover advertises.
func discoveredExtensions(t *testing.T, s *Server) map[string]bool {
	t.Helper()
	res := rpcRec(t, s, "/mcp", 1, "server/discover", params(nil)).result(t)
	caps, _ := res["capabilities"].(M)
	exts, _ := caps["extensions"].(M)
	out := map[string]bool{}
	for id := range exts {
		out[id] = true
	}
	return out
}

// EnableExtension counts its callers: the extension is withdrawn when the
// last disable runs, a disable counts once, and RelayTasks' removal
// withdraws the tasks extension only while nothing else enabled it.
func TestEnableExtensionCounted(t *testing.T) {
	s, err := NewServer(Implementation{Name: "x", Version: "1"}, &Options{})
	if err != nil {
		t.Fatal(err)
	}
	const id = "example.com/ext"
	d1 := s.EnableExtension(id, exactjson.Value{})
	d2 := s.EnableExtension(id, exactjson.Object(exactjson.Field("v", exactjson.Int(2))))
	steps := []struct {
		name string
		do   func()
		want bool
	}{
		{"both enabled", func() {}, true},
		{"first disabled", d1, true},
		{"first disabled again (counts once)", d1, true},
		{"second disabled", d2, false},
		{"second disabled again", d2, false},
		{"enabled anew", func() { s.EnableExtension(id, exactjson.Value{}) }, true},
	}
	for _, st := range steps {
		st.do()
		if got := discoveredExtensions(t, s)[id]; got != st.want {
			t.Fatalf("%s: advertised %v, want %v", st.name, got, st.want)
		}
	}

	r, err := NewServer(Implementation{Name: "r", Version: "1"}, &Options{})
	if err != nil {
		t.Fatal(err)
	}
	rmA, err := r.Proxy().RelayTasks("a", nopRelay{})
	if err != nil {
		t.Fatal(err)
	}
	rmB, err := r.Proxy().RelayTasks("b", nopRelay{})
	if err != nil {
		t.Fatal(err)
	}
	rmA()
	if !discoveredExtensions(t, r)[TasksExtension] {
		t.Fatal("tasks extension withdrawn while relay b remains")
	}
	rmB()
	rmB()
	if discoveredExtensions(t, r)[TasksExtension] {
		t.Fatal("tasks extension still advertised with no relay left")
	}
	disable := r.EnableExtension(TasksExtension, exactjson.Value{})
	rmC, err := r.Proxy().RelayTasks("c", nopRelay{})
	if err != nil {
		t.Fatal(err)
	}
	rmC()
	if !discoveredExtensions(t, r)[TasksExtension] {
		t.Fatal("removing a relay withdrew an extension enabled elsewhere")
	}
	disable()
}

// nopRelay is a TaskRelay with no tasks.
type nopRelay struct{}

func (nopRelay) GetTask(context.Context, *Request, string) (*task.Record, error) {
	return nil, task.ErrNotFound
}
func (nopRelay) UpdateTask(context.Context, *Request, string, exactjson.Value) error {
	return task.ErrNotFound
}
func (nopRelay) CancelTask(context.Context, *Request, string) error { return task.ErrNotFound }

// HandleMethod's removal makes the method unknown again ("Method not
// found", as before it was registered), counts once, and leaves a later
// registration of the method in place.
func TestHandleMethodRemove(t *testing.T) {
	s, _ := newServer(t, &Options{})
	handler := func(v int64) MethodHandler {
		return func(ctx context.Context, req *Request) (*MethodResult, error) {
			return &MethodResult{Body: exactjson.Object(exactjson.Field("v", exactjson.Int(v)))}, nil
		}
	}
	register := func(v int64) func() {
		remove, err := s.HandleMethod("x/m", MethodOptions{}, handler(v))
		if err != nil {
			t.Fatal(err)
		}
		return remove
	}
	var r1, r2 func()
	steps := []struct {
		name string
		do   func()
		want int64 // the handler answering; 0: Method not found
	}{
		{"before registration", func() {}, 0},
		{"registered", func() { r1 = register(1) }, 1},
		{"removed", func() { r1() }, 0},
		{"registered anew", func() { r1 = register(1) }, 1},
		{"registered again, replacing", func() { r2 = register(2) }, 2},
		{"the replaced one's removal", func() { r1() }, 2},
		{"removed", func() { r2() }, 0},
		{"removed again (counts once)", func() { r2(); register(3); r2() }, 3},
	}
	for i, st := range steps {
		st.do()
		r := rpcRec(t, s, "/mcp", i, "x/m", params(nil))
		if st.want == 0 {
			if r.Msg.Error == nil || r.Msg.Error.Code != CodeMethodNotFound {
				t.Fatalf("%s: %v, want Method not found", st.name, r)
			}
			continue
		}
		if got := fmt.Sprint(r.result(t)["v"]); got != fmt.Sprint(st.want) {
			t.Fatalf("%s: v = %v, want %d", st.name, got, st.want)
		}
	}
}
