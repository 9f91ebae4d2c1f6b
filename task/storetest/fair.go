package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/weftmcp/weft/task"
)

// Noisy-neighbour tests (issue 25, D4): one partition's backlog must not
// delay another partition's first task. They assert that the victim is
// served, never how fast.

// floodSize is how many tasks the noisy tenant queues.
func floodSize() int {
	if RaceEnabled {
		return 300
	}
	return 2000
}

var (
	tenantA = task.Owner{Principal: "alice", Partition: "tenant-a"}
	tenantB = task.Owner{Principal: "bob", Partition: "tenant-b"}
)

// flood creates n tasks of owner, oldest first.
func (e *env) flood(owner task.Owner, n int) []string {
	e.t.Helper()
	ids := make([]string, 0, n)
	for range n {
		ids = append(ids, e.create(task.NewTask{Owner: owner, Operation: "flood"}).ID)
	}
	return ids
}

// testClaimFairAcrossPartitions: tenant A queued a backlog long before
// tenant B's one task; B's task is in the very next claim (one task of
// every partition with claimable tasks before a second of any), and
// consecutive single claims that pass the partition they served last as
// ClaimOptions.After alternate between the partitions.
func testClaimFairAcrossPartitions(t *testing.T, e *env) {
	aIDs := e.flood(tenantA, floodSize())
	e.clock.Advance(time.Millisecond)
	b := e.create(task.NewTask{Owner: tenantB, Operation: "victim"})

	got, err := e.s.Claim(e.ctx, "w", time.Minute, 2)
	if err != nil {
		t.Fatalf("Claim(max 2): %v", err)
	}
	var ids []string
	for _, r := range got {
		ids = append(ids, r.ID)
	}
	if !slices.Contains(ids, b.ID) {
		t.Fatalf("Claim(max 2) after tenant A's %d tasks = %d tasks without tenant B's task %s: A's backlog delays B",
			len(aIDs), len(got), b.ID)
	}
	if !slices.Contains(ids, aIDs[0]) {
		t.Fatalf("Claim(max 2) = %v, want A's oldest task %s too", ids, aIDs[0])
	}

	// Single claims rotate: B's second task is served within two claims
	// of the cursor-carrying worker, however long A's queue is.
	b2 := e.create(task.NewTask{Owner: tenantB, Operation: "victim"})
	after := tenantB.Partition // the partition the last claim served last
	served := false
	for range 2 {
		rs, err := e.s.Claim(e.ctx, "w", time.Minute, 1, task.ClaimOptions{After: after})
		if err != nil || len(rs) != 1 {
			t.Fatalf("Claim(max 1) = %d tasks, %v", len(rs), err)
		}
		after = rs[0].Owner.Partition
		served = served || rs[0].ID == b2.ID
	}
	if !served {
		t.Fatalf("two single claims carrying the cursor did not serve tenant B's task %s", b2.ID)
	}

	// Excluded partitions are not claimed from.
	rs, err := e.s.Claim(e.ctx, "w", time.Minute, 5, task.ClaimOptions{Exclude: []string{tenantA.Partition}})
	if err != nil || len(rs) != 0 {
		t.Fatalf("Claim excluding tenant A with only A's tasks claimable = %d tasks, %v; want none", len(rs), err)
	}
}

// testLiveQuota: Create refuses a task past NewTask.Quota (ErrLimit) per
// owner and per partition, counting only live (non-terminal) tasks, and
// other owners and partitions are unaffected.
func testLiveQuota(t *testing.T, e *env) {
	q := task.Quota{PerOwner: 3, PerPartition: 5}
	mk := func(o task.Owner) (*task.Record, error) {
		return e.s.Create(e.ctx, task.NewTask{Owner: o, Operation: "op", Quota: q})
	}
	alice := task.Owner{Principal: "alice", Partition: "p"}
	carol := task.Owner{Principal: "carol", Partition: "p"}
	var first *task.Record
	for i := range 3 {
		r, err := mk(alice)
		if err != nil {
			t.Fatalf("create %d of alice: %v", i, err)
		}
		if first == nil {
			first = r
		}
	}
	if _, err := mk(alice); !errors.Is(err, task.ErrLimit) {
		t.Fatalf("alice's 4th live task: %v, want ErrLimit", err)
	}
	for i := range 2 {
		if _, err := mk(carol); err != nil {
			t.Fatalf("create %d of carol (same partition): %v", i, err)
		}
	}
	if _, err := mk(carol); !errors.Is(err, task.ErrLimit) {
		t.Fatalf("6th live task of partition p: %v, want ErrLimit", err)
	}
	// Another partition, and a create without a quota, are unaffected.
	if _, err := mk(task.Owner{Principal: "alice", Partition: "other"}); err != nil {
		t.Fatalf("alice in another partition: %v", err)
	}
	if _, err := e.s.Create(e.ctx, task.NewTask{Owner: alice, Operation: "op"}); err != nil {
		t.Fatalf("create without a quota: %v", err)
	}
	// A terminal task no longer counts.
	if _, err := e.s.RequestCancel(e.ctx, first.ID); err != nil {
		t.Fatalf("RequestCancel: %v", err)
	}
	// alice has 3 live (2 quota'd + 1 unquota'd) and the partition 6: still full.
	if _, err := mk(carol); !errors.Is(err, task.ErrLimit) {
		t.Fatalf("partition p with 6 live tasks: %v, want ErrLimit", err)
	}
	rs, err := e.s.Claim(e.ctx, "w", time.Minute, 10, task.ClaimOptions{Exclude: []string{"other"}})
	if err != nil {
		t.Fatalf("Claim: %v", err)
	}
	for _, r := range rs {
		if _, err := e.s.Finish(e.ctx, r.ID, r.Fence, task.Complete(json.RawMessage(`{}`))); err != nil {
			t.Fatalf("Finish: %v", err)
		}
	}
	if _, err := mk(alice); err != nil {
		t.Fatalf("alice after her tasks finished: %v", err)
	}
	if _, err := mk(carol); err != nil {
		t.Fatalf("carol after the partition's tasks finished: %v", err)
	}
}

// testRunnerNoisyNeighbour: tenant A's backlog of steps that never end
// (until the test ends) must leave a worker for tenant B, whose task
// completes. Without a per-partition bound on workers, A's steps occupy
// every worker and B waits for ever.
func testRunnerNoisyNeighbour(t *testing.T, e *env) {
	release := make(chan struct{})
	var once sync.Once
	unblock := func() { once.Do(func() { close(release) }) }
	defer unblock()
	h := func(ctx context.Context, job *task.Job) (task.Outcome, error) {
		if job.Owner().Partition == tenantA.Partition {
			select {
			case <-release:
			case <-ctx.Done():
				return task.Outcome{}, ctx.Err()
			}
		}
		return task.Complete(json.RawMessage(`{}`)), nil
	}
	aIDs := e.flood(tenantA, floodSize()/4)
	r := e.runner(h, 30*time.Second)
	r.Workers = 4
	stop := startRunner(t, r)
	defer func() { unblock(); _ = stop() }()
	// A's steps take the workers they may before B's task arrives.
	waitFor(t, 10*time.Second, "tenant A's steps to hold workers", func() bool {
		running := 0
		for _, id := range aIDs[:min(len(aIDs), 64)] {
			if got, err := e.s.Get(e.ctx, id); err == nil && got.LeaseOwner != "" {
				running++
			}
		}
		return running >= r.Workers-1
	})
	b := e.create(task.NewTask{Owner: tenantB, Operation: "victim"})
	waitFor(t, 20*time.Second, "tenant B's task to complete while tenant A's steps hold their workers", func() bool {
		got, err := e.s.Get(e.ctx, b.ID)
		return err == nil && got.Status == task.Completed
	})
}
