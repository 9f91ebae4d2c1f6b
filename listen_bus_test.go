package weft

import (
	"fmt"
	"slices"
	"testing"
)

// TestSubscriberPending: a subscriber keeps each pending event once, in
// the order of first arrival, by a scan of its few pending events or, past
// pendingScan of them, by an index; take hands them over, leaves the
// writers' queue when there are none, and does not keep a burst's array.
func TestSubscriberPending(t *testing.T) {
	tools := event{kind: evToolsListChanged}
	prompts := event{kind: evPromptsListChanged}
	updated := func(i int) event { return event{kind: evResourceUpdated, uri: fmt.Sprintf("file:///r%d", i)} }
	var burst, burstTwice []event
	for i := range 3 * pendingScan {
		burst = append(burst, updated(i))
	}
	burstTwice = append(append(append(burstTwice, burst...), tools), burst...)
	for _, tc := range []struct {
		name string
		in   []event
		want []event
	}{
		{"none", nil, nil},
		{"one", []event{tools}, []event{tools}},
		{"duplicates", []event{tools, prompts, tools, tools, prompts}, []event{tools, prompts}},
		{"same kind, other uri", []event{updated(1), updated(2), updated(1)}, []event{updated(1), updated(2)}},
		{"encoded once or again", []event{{kind: evToolsListChanged, open: tools.openFrame()}, {kind: evToolsListChanged, open: tools.openFrame()}},
			[]event{{kind: evToolsListChanged, open: tools.openFrame()}}},
		{"past the scan", burst, burst},
		{"past the scan, repeated", burstTwice, append(slices.Clone(burst), tools)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &subscriber{queued: true}
			for _, ev := range tc.in {
				s.mu.Lock()
				s.addLocked(ev)
				s.mu.Unlock()
			}
			if indexed := s.pending != nil; indexed != (len(tc.want) > pendingScan) {
				t.Errorf("indexed = %v with %d pending events (scan up to %d)", indexed, len(tc.want), pendingScan)
			}
			got := s.take(nil)
			if !slices.Equal(got, tc.want) {
				t.Fatalf("take = %v, want %v", got, tc.want)
			}
			if s.queued != (len(tc.want) > 0) {
				t.Errorf("queued = %v after taking %d events", s.queued, len(tc.want))
			}
			if len(s.order) != 0 || s.pending != nil || cap(s.order) > pendingScan {
				t.Errorf("after take: %d pending, index %v, cap %d kept", len(s.order), s.pending != nil, cap(s.order))
			}
			if again := s.take(got); len(again) != 0 || s.queued {
				t.Errorf("second take = %v (queued %v), want nothing and out of the queue", again, s.queued)
			}
			// Taken events may come again, and are pending once more.
			s.mu.Lock()
			s.addLocked(tools)
			s.addLocked(tools)
			s.mu.Unlock()
			if got := s.take(nil); !slices.Equal(got, []event{tools}) {
				t.Errorf("after a take, tools twice = %v", got)
			}
		})
	}
}
