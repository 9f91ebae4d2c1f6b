package pgstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/weftmcp/weft/task"
)

// Read-modify-writes (Renew, Finish, Release, SetStatusMessage,
// SubmitInput, RequestCancel) are committed in groups: committers goroutines
// each take every update waiting (up to maxGroup) and apply them in one
// transaction that locks their rows in id order (so that groups of several
// instances never deadlock), writes each changed row and commits once. One
// commit, and its WAL flush, then serves a whole group: at heavy load the
// finishes of many steps, at light load a group of one.
const (
	committers = 4
	maxGroup   = 64
	// groupTimeout bounds one group's transaction.
	groupTimeout = 30 * time.Second
)

// pendingUpdate is one read-modify-write waiting for a committer.
type pendingUpdate struct {
	op, id string
	apply  func(r *task.Record, now time.Time) (bool, error)
	done   chan updateResult // buffered: the committer never blocks on it
}

type updateResult struct {
	rec      *task.Record
	changed  bool
	applyErr error // the apply function's error: nothing changed
	err      error // the store's error
}

// update is the read-modify-write of one task under its row lock, committed
// in a group with the others waiting.
func (s *Store) update(ctx context.Context, op, id string, apply func(r *task.Record, now time.Time) (bool, error)) (*task.Record, bool, error) {
	if err := s.check(op + " " + id); err != nil {
		return nil, false, err
	}
	p := &pendingUpdate{op: op, id: id, apply: apply, done: make(chan updateResult, 1)}
	select {
	case s.updates <- p:
	case <-s.closing:
		return nil, false, fmt.Errorf("pgstore: %s %s: %w", op, id, task.ErrClosed)
	case <-ctx.Done():
		return nil, false, fmt.Errorf("pgstore: %s %s: %w", op, id, context.Cause(ctx))
	}
	select {
	case r := <-p.done:
		if r.applyErr != nil {
			return nil, false, r.applyErr
		}
		if r.err != nil {
			return nil, false, r.err
		}
		return r.rec, r.changed, nil
	case <-ctx.Done():
		// The group may still commit it: as when a connection drops during
		// COMMIT, the caller cannot know.
		return nil, false, fmt.Errorf("pgstore: %s %s: %w", op, id, context.Cause(ctx))
	}
}

// committer commits groups of waiting updates until the store closes.
func (s *Store) committer() {
	defer s.committersDone.Done()
	group := make([]*pendingUpdate, 0, maxGroup)
	for {
		group = group[:0]
		select {
		case <-s.closing:
			return
		case p := <-s.updates:
			group = append(group, p)
		}
	more:
		for len(group) < maxGroup {
			select {
			case p := <-s.updates:
				group = append(group, p)
			default:
				break more
			}
		}
		s.commitGroup(group)
	}
}

// commitGroup applies group in one transaction and answers every update.
func (s *Store) commitGroup(group []*pendingUpdate) {
	ctx, cancel := context.WithTimeout(context.Background(), groupTimeout)
	defer cancel()
	now := s.timestamp()
	ids := make([]string, 0, len(group))
	for _, p := range group {
		ids = append(ids, p.id)
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	results := make([]updateResult, len(group))
	var changes [][2]*task.Record
	err := s.inTx(ctx, "update "+group[0].op+" "+group[0].id, func(t *ptx) error {
		changes = changes[:0]
		current := make(map[string]*task.Record, len(ids))
		loaded := make(map[string]int64, len(ids))
		err := t.query(ctx, s.q.loadMany, []any{ids}, func(row pgx.Rows) error {
			r, err := scanRecord(row)
			if err == nil {
				current[r.ID], loaded[r.ID] = r, r.Fence
			}
			return err
		})
		if err != nil {
			return fmt.Errorf("load: %w", err)
		}
		dirty := map[string]bool{}
		for i, p := range group {
			r := current[p.id]
			if r == nil {
				results[i].applyErr = fmt.Errorf("pgstore: %s %s: %w", p.op, p.id, task.ErrNotFound)
				continue
			}
			next := r.Clone()
			changed, applyErr := p.apply(next, now)
			if applyErr != nil {
				results[i].applyErr = applyErr
				continue
			}
			results[i].rec, results[i].changed = next.Clone(), changed
			if changed {
				changes = append(changes, [2]*task.Record{r, next})
				current[p.id] = next
				dirty[p.id] = true
			}
		}
		if len(dirty) == 0 {
			return nil // rolled back: nothing was written
		}
		b := &pgx.Batch{}
		for _, id := range ids {
			if dirty[id] {
				s.queueStore(b, current[id], loaded[id])
			}
		}
		return t.commit(ctx, b)
	})
	if err == nil {
		s.announce(changes...)
	}
	for i, p := range group {
		r := results[i]
		if err != nil && r.applyErr == nil {
			r = updateResult{err: fmt.Errorf("pgstore: %s %s: %w", p.op, p.id, err)}
		}
		p.done <- r
	}
}

// pendingCreate is one Create waiting for a creator.
type pendingCreate struct {
	r    *task.Record
	spec task.Quota
	done chan error // buffered
}

// insert stores r, committed in a group with the other creates waiting.
func (s *Store) insert(ctx context.Context, r *task.Record, q task.Quota) error {
	p := &pendingCreate{r: r, spec: q, done: make(chan error, 1)}
	select {
	case s.creates <- p:
	case <-s.closing:
		return fmt.Errorf("pgstore: create %s: %w", r.ID, task.ErrClosed)
	case <-ctx.Done():
		return fmt.Errorf("pgstore: create %s: %w", r.ID, context.Cause(ctx))
	}
	select {
	case err := <-p.done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("pgstore: create %s: %w", r.ID, context.Cause(ctx))
	}
}

// creator commits groups of waiting creates until the store closes.
func (s *Store) creator() {
	defer s.committersDone.Done()
	group := make([]*pendingCreate, 0, maxGroup)
	for {
		group = group[:0]
		select {
		case <-s.closing:
			return
		case p := <-s.creates:
			group = append(group, p)
		}
	more:
		for len(group) < maxGroup {
			select {
			case p := <-s.creates:
				group = append(group, p)
			default:
				break more
			}
		}
		s.commitCreates(group)
	}
}

// commitCreates inserts group in one transaction (BEGIN, the INSERTs and
// COMMIT in one round trip); an id already taken is ErrExists for its
// create only (ON CONFLICT DO NOTHING). Creates with a task.Quota are
// admitted first, in group order, against the live tasks counted at the
// start of the transaction (one more round trip): creates committed
// concurrently by other groups, of this instance or others, are not seen,
// so a quota may be exceeded by the creates of one owner in flight at once.
func (s *Store) commitCreates(group []*pendingCreate) {
	ctx, cancel := context.WithTimeout(context.Background(), groupTimeout)
	defer cancel()
	inserted := make([]bool, len(group))
	refused := make([]error, len(group))
	err := s.inTx(ctx, "create "+group[0].r.ID, func(t *ptx) error {
		clear(refused)
		if err := s.admitGroup(ctx, t, group, refused); err != nil {
			return err
		}
		b := &pgx.Batch{}
		if !t.begun {
			b.Queue("BEGIN")
		}
		for i, p := range group {
			if refused[i] == nil {
				s.queueInsert(b, p.r)
			}
		}
		b.Queue("COMMIT")
		br := t.conn.SendBatch(ctx, b)
		var err error
		if !t.begun {
			_, err = br.Exec()
		}
		for i := range group {
			if err != nil {
				break
			}
			if refused[i] != nil {
				continue
			}
			var id string
			switch err = br.QueryRow().Scan(&id); {
			case err == nil:
				inserted[i] = true
			case errors.Is(err, pgx.ErrNoRows):
				err = nil
			}
		}
		if err == nil {
			_, err = br.Exec()
		}
		if cerr := br.Close(); err == nil {
			err = cerr
		}
		return err
	})
	for i, p := range group {
		switch {
		case err != nil:
			p.done <- fmt.Errorf("pgstore: create %s: %w", p.r.ID, err)
		case refused[i] != nil:
			p.done <- fmt.Errorf("pgstore: create %s: %w", p.r.ID, refused[i])
		case !inserted[i]:
			p.done <- fmt.Errorf("pgstore: create %s: %w", p.r.ID, task.ErrExists)
		default:
			s.announce([2]*task.Record{nil, p.r})
			p.done <- nil
		}
	}
}

// liveKey is an owner's or (principal nil) a partition's live-task count.
type liveKey struct {
	partition string
	principal *string
}

// admitGroup counts, in t, the live tasks of the owners and partitions the
// quotas of group bound, and sets refused[i] (task.ErrLimit) for each
// create that its quota does not admit after the creates before it in the
// group. It does nothing when no create has a quota.
func (s *Store) admitGroup(ctx context.Context, t *ptx, group []*pendingCreate, refused []error) error {
	bounds := map[liveKey]int{} // the largest bound asked for each key
	var keys []liveKey
	add := func(k liveKey, n int) {
		if n <= 0 {
			return
		}
		if _, ok := bounds[k]; !ok {
			keys = append(keys, k)
		}
		bounds[k] = max(bounds[k], n)
	}
	ownerKey := func(o task.Owner) liveKey {
		pr := o.Principal
		return liveKey{o.Partition, &pr}
	}
	for _, p := range group {
		add(ownerKey(p.r.Owner), p.spec.PerOwner)
		add(liveKey{partition: p.r.Owner.Partition}, p.spec.PerPartition)
	}
	if len(keys) == 0 {
		return nil
	}
	parts := make([]string, len(keys))
	principals := make([]*string, len(keys))
	ns := make([]int32, len(keys))
	for i, k := range keys {
		parts[i], principals[i], ns[i] = k.partition, k.principal, int32(min(bounds[k], 1<<30))
	}
	counts := map[string]int{} // by the key's string form
	str := func(k liveKey) string {
		if k.principal == nil {
			return k.partition
		}
		return k.partition + "\x00" + *k.principal
	}
	i := 0
	err := t.query(ctx, s.q.live, []any{parts, principals, ns}, func(row pgx.Rows) error {
		var n int
		if err := row.Scan(&n); err != nil {
			return err
		}
		counts[str(keys[i])] = n
		i++
		return nil
	})
	if err != nil {
		return fmt.Errorf("count live tasks: %w", err)
	}
	for j, p := range group {
		if p.spec.PerOwner <= 0 && p.spec.PerPartition <= 0 {
			continue
		}
		ok, pk := str(ownerKey(p.r.Owner)), str(liveKey{partition: p.r.Owner.Partition})
		if err := p.spec.Admit(counts[ok], counts[pk]); err != nil {
			refused[j] = err
			continue
		}
		counts[ok]++
		counts[pk]++
	}
	return nil
}
