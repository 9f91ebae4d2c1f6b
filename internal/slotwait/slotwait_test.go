package slotwait

import "testing"

func woken(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func TestWaiters(t *testing.T) {
	var w Waiters
	a1, rmA1 := w.Add("s1", "r1")
	a2, rmA2 := w.Add("s1", "r1")
	b, rmB := w.Add("s1", "r2")
	c, rmC := w.Add("s2", "r1")
	steps := []struct {
		name         string
		wake         func()
		a1, a2, b, c bool
	}{
		{"one slot", func() { w.Wake("s1", "r1") }, true, true, false, false},
		{"a slot nobody waits for", func() { w.Wake("s3", "r1") }, false, false, false, false},
		{"a session", func() { w.WakeSession("s1") }, true, true, true, false},
		{"twice before reading: one value, never blocking", func() { w.Wake("s2", "r1"); w.Wake("s2", "r1") }, false, false, false, true},
	}
	for _, st := range steps {
		st.wake()
		got := []bool{woken(a1), woken(a2), woken(b), woken(c)}
		want := []bool{st.a1, st.a2, st.b, st.c}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("%s: woken %v, want %v", st.name, got, want)
			}
		}
	}
	if woken(c) {
		t.Fatal("a second value was buffered")
	}
	rmA1()
	w.Wake("s1", "r1")
	if woken(a1) || !woken(a2) {
		t.Fatal("a removed waiter was woken, or the other one was not")
	}
	for _, rm := range []func(){rmA2, rmB, rmC} {
		rm()
	}
	if n := w.Len(); n != 0 {
		t.Fatalf("%d waiters left after every remove", n)
	}
}
