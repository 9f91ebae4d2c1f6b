package seal

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func snapshotString(s Snapshot) string {
	return fmt.Sprintf("%s %v %s", s.ActiveID, s.VerificationIDs, s.Fingerprint)
}

func TestManagerStage(t *testing.T) {
	a, b := mustKey(t, "a", testSecret(1, 32)), mustKey(t, "b", testSecret(2, 32))
	m := NewManager(mustKeyring(t, a), nil)
	if err := m.Stage(b); err != nil {
		t.Fatal(err)
	}
	s := m.Snapshot()
	if s.ActiveID != "a" || !slices.Equal(s.VerificationIDs, []string{"b"}) {
		t.Fatalf("after Stage: %+v", s)
	}
	if !s.Fingerprint.Equal(mustKeyring(t, a, b).Fingerprint()) {
		t.Fatal("fingerprint after Stage")
	}
	// Idempotent for identical keys in any role, including separately built ones.
	for _, k := range []Key{a, b, mustKey(t, "a", testSecret(1, 32)), mustKey(t, "b", testSecret(2, 32))} {
		if err := m.Stage(k); err != nil {
			t.Fatalf("Stage(%v) again: %v", k, err)
		}
	}
	if got := m.Snapshot(); snapshotString(got) != snapshotString(s) {
		t.Fatalf("idempotent Stage changed the keyring: %+v", got)
	}
	// Conflicts change nothing.
	before := m.Keyring()
	for _, tc := range []struct {
		k   Key
		err error
	}{
		{mustKey(t, "a", testSecret(9, 32)), ErrKeyConflict}, // active id, other bytes
		{mustKey(t, "b", testSecret(9, 32)), ErrKeyConflict}, // verification id, other bytes
		{mustKey(t, "c", testSecret(1, 32)), ErrKeyConflict}, // bytes of a under another id
		{mustKey(t, "c", testSecret(2, 32)), ErrKeyConflict}, // bytes of b under another id
		{Key{}, ErrInvalidKey},
	} {
		if err := m.Stage(tc.k); !errors.Is(err, tc.err) {
			t.Errorf("Stage(%v) = %v, want %v", tc.k, err, tc.err)
		}
		if m.Keyring() != before {
			t.Fatalf("failed Stage(%v) changed the keyring", tc.k)
		}
	}
}

func TestManagerActivate(t *testing.T) {
	a, b, c := mustKey(t, "a", testSecret(1, 32)), mustKey(t, "b", testSecret(2, 32)), mustKey(t, "c", testSecret(3, 32))
	m := NewManager(mustKeyring(t, a, c), nil)
	tokA := mustSeal(t, m, nil, []byte("under a"))
	if err := m.Activate("b"); !errors.Is(err, ErrUnknownKey) {
		t.Fatalf("Activate(unstaged) = %v", err)
	}
	if err := m.Stage(b); err != nil {
		t.Fatal(err)
	}
	if err := m.Activate("b"); err != nil {
		t.Fatal(err)
	}
	s := m.Snapshot()
	if s.ActiveID != "b" || !slices.Equal(s.VerificationIDs, []string{"a", "c"}) {
		t.Fatalf("after Activate: %+v", s)
	}
	if !s.Fingerprint.Equal(mustKeyring(t, b, a, c).Fingerprint()) {
		t.Fatal("fingerprint after Activate")
	}
	if err := m.Activate("b"); err != nil || m.Keyring().Fingerprint() != s.Fingerprint {
		t.Fatalf("Activate(active) = %v", err)
	}
	// New seals use b; tokens under a still open.
	tokB := mustSeal(t, m, nil, []byte("under b"))
	if got := decodeBody(t, tokB)[2:3]; string(got) != "b" {
		t.Fatalf("sealed under %q", got)
	}
	for _, tok := range []string{tokA, tokB} {
		if _, err := m.Open(bg, tok, nil); err != nil {
			t.Fatal(err)
		}
	}
	// Rollback: re-activate a.
	if err := m.Activate("a"); err != nil || m.Snapshot().ActiveID != "a" {
		t.Fatalf("rollback: %v", err)
	}
}

func TestManagerRotate(t *testing.T) {
	a, b := mustKey(t, "a", testSecret(1, 32)), mustKey(t, "b", testSecret(2, 32))
	m := NewManager(mustKeyring(t, a), nil)
	for range 2 { // retry-safe
		if err := m.Rotate(b); err != nil {
			t.Fatal(err)
		}
		if s := m.Snapshot(); s.ActiveID != "b" || !slices.Equal(s.VerificationIDs, []string{"a"}) {
			t.Fatalf("after Rotate: %+v", s)
		}
	}
	// A separately built identical key is the same key.
	if err := m.Rotate(mustKey(t, "b", testSecret(2, 32))); err != nil {
		t.Fatal(err)
	}
	// Rotating back to a staged key activates it.
	if err := m.Rotate(mustKey(t, "a", testSecret(1, 32))); err != nil || m.Snapshot().ActiveID != "a" {
		t.Fatalf("Rotate back: %v %+v", err, m.Snapshot())
	}
	before := m.Keyring()
	for _, k := range []Key{mustKey(t, "b", testSecret(9, 32)), mustKey(t, "z", testSecret(2, 32)), {}} {
		if err := m.Rotate(k); err == nil {
			t.Fatalf("Rotate(%v) succeeded", k)
		}
		if m.Keyring() != before {
			t.Fatal("failed Rotate changed the keyring")
		}
	}
}

func TestManagerRemove(t *testing.T) {
	a, b := mustKey(t, "a", testSecret(1, 32)), mustKey(t, "b", testSecret(2, 32))
	m := NewManager(mustKeyring(t, a, b), nil)
	tokB := func() string {
		m2 := NewManager(mustKeyring(t, b), nil)
		return mustSeal(t, m2, nil, []byte("x"))
	}()
	if _, err := m.Open(bg, tokB, nil); err != nil {
		t.Fatal(err)
	}
	if removed, err := m.Remove("a"); removed || !errors.Is(err, ErrActiveKey) {
		t.Fatalf("Remove(active) = %v, %v", removed, err)
	}
	if removed, err := m.Remove("nope"); removed || err != nil {
		t.Fatalf("Remove(absent) = %v, %v", removed, err)
	}
	if removed, err := m.Remove("b"); !removed || err != nil {
		t.Fatalf("Remove(b) = %v, %v", removed, err)
	}
	if removed, err := m.Remove("b"); removed || err != nil {
		t.Fatalf("Remove(b) again = %v, %v", removed, err)
	}
	if s := m.Snapshot(); s.ActiveID != "a" || len(s.VerificationIDs) != 0 || s.VerificationIDs == nil {
		t.Fatalf("after Remove: %#v", s)
	}
	_, err := m.Open(bg, tokB, nil)
	wantInvalid(t, err, ReasonUnknownKey)
	// Staging it again restores it.
	if err := m.Stage(b); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Open(bg, tokB, nil); err != nil {
		t.Fatal(err)
	}
}

func TestReservationBlocksRemove(t *testing.T) {
	a, b := mustKey(t, "a", testSecret(1, 32)), mustKey(t, "b", testSecret(2, 32))
	m := NewManager(mustKeyring(t, a), nil)
	r1, err := m.Reserve()
	if err != nil {
		t.Fatal(err)
	}
	r2, _ := m.Reserve()
	if r1.KeyID() != "a" {
		t.Fatal(r1.KeyID())
	}
	if err := m.Rotate(b); err != nil {
		t.Fatal(err)
	}
	// The reservation still seals with a after the rotation.
	tok, err := r1.Seal([]byte("bind"), []byte("in flight"))
	if err != nil {
		t.Fatal(err)
	}
	if got := decodeBody(t, tok)[2:3]; string(got) != "a" {
		t.Fatalf("reserved seal used %q", got)
	}
	if removed, err := m.Remove("a"); removed || !errors.Is(err, ErrKeyInUse) {
		t.Fatalf("Remove(reserved) = %v, %v", removed, err)
	}
	r1.Release()
	r1.Release() // idempotent: must not release r2's hold
	if removed, err := m.Remove("a"); removed || !errors.Is(err, ErrKeyInUse) {
		t.Fatalf("Remove with one reservation left = %v, %v", removed, err)
	}
	if _, err := r1.Seal(nil, nil); err == nil {
		t.Fatal("Seal after Release succeeded")
	}
	r2.Release()
	if removed, err := m.Remove("a"); !removed || err != nil {
		t.Fatalf("Remove after Release = %v, %v", removed, err)
	}
	// The token sealed under the removed key no longer opens.
	_, err = m.Open(bg, tok, []byte("bind"))
	wantInvalid(t, err, ReasonUnknownKey)
	// New reservations hold b.
	r3, _ := m.Reserve()
	defer r3.Release()
	if r3.KeyID() != "b" {
		t.Fatal(r3.KeyID())
	}
}

func TestManagersShareTokens(t *testing.T) {
	a := mustKey(t, "a", testSecret(1, 32))
	r := mustKeyring(t, a)
	m1, m2 := NewManager(r, nil), NewManager(r, nil)
	// A third manager loads the same key from its bytes.
	m3 := NewManager(mustKeyring(t, mustKey(t, "a", a.Secret())), nil)
	// Same id, other bytes.
	evil := NewManager(mustKeyring(t, mustKey(t, "a", testSecret(9, 32))), nil)
	// Same bytes, other id.
	renamed := NewManager(mustKeyring(t, mustKey(t, "a2", a.Secret())), nil)
	binding := []byte("bind")
	for i, m := range []*Manager{m1, m2, m3} {
		tok := mustSeal(t, m, binding, []byte("hello"))
		for j, o := range []*Manager{m1, m2, m3} {
			if got, err := o.Open(bg, tok, binding); err != nil || string(got) != "hello" {
				t.Errorf("manager %d cannot open a token of manager %d: %v", j, i, err)
			}
		}
		_, err := evil.Open(bg, tok, binding)
		wantInvalid(t, err, ReasonAuthFailed)
		_, err = renamed.Open(bg, tok, binding)
		wantInvalid(t, err, ReasonUnknownKey)
		_, err = m.Open(bg, mustSeal(t, evil, binding, []byte("x")), binding)
		wantInvalid(t, err, ReasonAuthFailed)
	}
	if m1.Snapshot().Fingerprint != m3.Snapshot().Fingerprint || m1.Snapshot().Fingerprint == evil.Snapshot().Fingerprint {
		t.Fatal("fingerprints")
	}
}

func TestEphemeralManager(t *testing.T) {
	m := NewEphemeralManager(nil)
	if !m.IsEphemeral() || NewManager(m.Keyring(), nil).IsEphemeral() {
		t.Fatal("IsEphemeral")
	}
	if id := m.Snapshot().ActiveID; !regexp.MustCompile(`^ephemeral-[0-9a-f]{8}$`).MatchString(id) {
		t.Fatalf("ephemeral id %q", id)
	}
	tok := mustSeal(t, m, nil, []byte("dev"))
	if _, err := m.Open(bg, tok, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := NewEphemeralManager(nil).Open(bg, tok, nil); err == nil {
		t.Fatal("another ephemeral manager opened the token")
	}
	if got := NewEphemeralManager(&ManagerOptions{MaxTokenBytes: 100}); got.maxTokenBytes != 100 {
		t.Fatal("options ignored")
	}
}

func TestNewManagerInvalidKeyringPanics(t *testing.T) {
	for _, r := range []*Keyring{nil, {}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Fatalf("NewManager(%v, nil) did not panic", r)
				}
			}()
			NewManager(r, nil)
		}()
	}
	if _, err := (&Keyring{}).MarshalFile(); err == nil {
		t.Fatal("MarshalFile of a zero Keyring succeeded")
	}
	if err := WriteKeyringFile(t.TempDir()+"/k.json", nil); err == nil {
		t.Fatal("WriteKeyringFile(nil) succeeded")
	}
}

// TestConcurrentRotation seals and opens from many goroutines while another
// goroutine rotates keys and removes old ones. A token sealed and opened
// under one reservation must always open; a token opened after its
// reservation ended may fail only because its key has since been removed.
func TestConcurrentRotation(t *testing.T) {
	m := NewManager(mustKeyring(t, mustGenerate(t, "gen-0")), nil)
	const workers = 8
	var (
		stop     atomic.Bool
		wg       sync.WaitGroup
		seals    atomic.Int64
		inUse    atomic.Int64
		rotation atomic.Int64
	)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			binding := []byte(fmt.Sprintf("worker-%d", w))
			for i := 0; !stop.Load() || i < 50; i++ {
				pt := []byte(fmt.Sprintf(`{"w":%d,"i":%d}`, w, i))
				if i%2 == 0 {
					res, err := m.Reserve()
					if err != nil {
						t.Error(err)
						return
					}
					tok, err := res.Seal(binding, pt)
					if err != nil {
						t.Error(err)
						return
					}
					got, err := m.Open(bg, tok, binding)
					res.Release()
					if err != nil || string(got) != string(pt) {
						t.Errorf("open under reservation: %v", err)
						return
					}
				} else {
					tok, err := m.Seal(bg, binding, pt)
					if err != nil {
						t.Error(err)
						return
					}
					got, err := m.Open(bg, tok, binding)
					if err != nil {
						if Reason(err) != ReasonUnknownKey {
							t.Errorf("open after seal: %v (%s)", err, Reason(err))
							return
						}
						continue // the key was rotated out and removed in between
					}
					if string(got) != string(pt) {
						t.Error("plaintext mismatch")
						return
					}
				}
				seals.Add(1)
			}
		}()
	}
	// Rotator: rotate, keep the two previous keys staged, remove older ones.
	wg.Add(1)
	go func() {
		defer wg.Done()
		var staged []string
		for g := 1; g <= 60; g++ {
			prev := m.Snapshot().ActiveID
			k, err := GenerateKey(fmt.Sprintf("gen-%d", g))
			if err != nil {
				t.Error(err)
				return
			}
			if err := m.Rotate(k); err != nil {
				t.Error(err)
				return
			}
			rotation.Add(1)
			staged = append(staged, prev)
			for len(staged) > 2 {
				removed, err := m.Remove(staged[0])
				switch {
				case errors.Is(err, ErrKeyInUse):
					inUse.Add(1)
					time.Sleep(10 * time.Microsecond)
					continue
				case err != nil || !removed:
					t.Errorf("Remove(%s) = %v, %v", staged[0], removed, err)
					return
				}
				staged = staged[1:]
			}
			time.Sleep(100 * time.Microsecond)
		}
		stop.Store(true)
	}()
	wg.Wait()
	s := m.Snapshot()
	if s.ActiveID != "gen-60" || len(s.VerificationIDs) != 2 {
		t.Fatalf("final snapshot %+v", s)
	}
	m.mu.Lock()
	for id, c := range m.reserved {
		if c.Load() != 0 {
			t.Errorf("reservation count for %s = %d", id, c.Load())
		}
	}
	m.mu.Unlock()
	t.Logf("%d verified seals, %d rotations, %d removals refused while reserved", seals.Load(), rotation.Load(), inUse.Load())
}
