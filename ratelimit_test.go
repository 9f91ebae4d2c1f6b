package weft

import (
	"context"
	"testing"
	"time"
)

// TestTokenBucket: a key's bucket allows Burst at once and refills at
// Rate, keys are independent, a refusal says how long until the next
// token, and the buckets kept stay within MaxKeys.
func TestTokenBucket(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	now := t0
	tb := &TokenBucket{Rate: 1, Burst: 60, MaxKeys: 4, Now: func() time.Time { return now }}
	ctx := context.Background()
	for i := range 60 {
		if ok, _ := tb.Allow(ctx, "a"); !ok {
			t.Fatalf("request %d of the burst refused", i+1)
		}
	}
	if ok, wait := tb.Allow(ctx, "a"); ok || wait != time.Second {
		t.Errorf("past the burst: %v, wait %s; want refused, 1s", ok, wait)
	}
	if ok, _ := tb.Allow(ctx, "b"); !ok {
		t.Error("another key refused")
	}
	now = t0.Add(time.Second)
	if ok, _ := tb.Allow(ctx, "a"); !ok {
		t.Error("no refill after a second")
	}
	for _, k := range []string{"c", "d", "e", "f", "g"} {
		tb.Allow(ctx, k)
	}
	if n := len(tb.buckets); n > 4 {
		t.Errorf("%d keys kept, bound 4", n)
	}
}
