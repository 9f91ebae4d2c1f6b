package weft

import (
	"sync"
	"sync/atomic"
	"testing"
)

func TestExtensionState(t *testing.T) {
	type keyA struct{}
	type keyB struct{}
	a := NewServer(Implementation{Name: "a", Version: "1"}, nil)
	b := NewServer(Implementation{Name: "b", Version: "1"}, nil)
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
