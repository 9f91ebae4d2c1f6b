package task_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"

	"github.com/weftmcp/weft/task"
)

func TestHub(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := task.NewHub(2)
		ctx, cancel := context.WithCancel(t.Context())
		a, err := h.Subscribe(ctx, "c")
		if err != nil {
			t.Fatal(err)
		}
		b, err := h.Subscribe(t.Context(), "c")
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{"1", "2", "3"} { // "3" overflows: dropped, publisher not blocked
			if err := h.Publish(t.Context(), "c", p); err != nil {
				t.Fatal(err)
			}
		}
		if err := h.Publish(t.Context(), "nobody", "x"); err != nil {
			t.Fatal(err)
		}
		for _, ch := range []<-chan string{a, b} {
			if got := []string{<-ch, <-ch}; got[0] != "1" || got[1] != "2" {
				t.Fatalf("received %v, want [1 2]", got)
			}
			select {
			case p := <-ch:
				t.Fatalf("received %q beyond the buffer", p)
			default:
			}
		}
		cancel()
		synctest.Wait()
		if _, ok := <-a; ok {
			t.Fatal("subscription not closed by its context")
		}
		if err := h.Close(); err != nil {
			t.Fatal(err)
		}
		if _, ok := <-b; ok {
			t.Fatal("subscription not closed by Close")
		}
		if err := h.Publish(t.Context(), "c", "x"); !errors.Is(err, task.ErrClosed) {
			t.Fatalf("Publish after Close: %v", err)
		}
		if _, err := h.Subscribe(t.Context(), "c"); !errors.Is(err, task.ErrClosed) {
			t.Fatalf("Subscribe after Close: %v", err)
		}
		if err := h.Close(); err != nil {
			t.Fatal(err)
		}
	})
}

func TestHubInvalid(t *testing.T) {
	h := task.NewHub(0)
	defer h.Close()
	done, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name    string
		ctx     context.Context
		channel string
		want    error
	}{
		{"empty channel", context.Background(), "", task.ErrInvalid},
		{"newline", context.Background(), "a\nb", task.ErrInvalid},
		{"done context", done, "c", context.Canceled},
	}
	for _, tc := range tests {
		if err := h.Publish(tc.ctx, tc.channel, "x"); !errors.Is(err, tc.want) {
			t.Errorf("%s: Publish = %v, want %v", tc.name, err, tc.want)
		}
		if _, err := h.Subscribe(tc.ctx, tc.channel); !errors.Is(err, tc.want) {
			t.Errorf("%s: Subscribe = %v, want %v", tc.name, err, tc.want)
		}
	}
}
