package seal_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/weftmcp/weft/seal"
)

// Generate a key, put it in a keyring and store the keyring in a file that
// only the server's user can read.
func ExampleGenerateKey() {
	key, err := seal.GenerateKey("2026-08")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(key) // the secret is never printed

	ring, err := seal.NewKeyring(key)
	if err != nil {
		log.Fatal(err)
	}
	dir, _ := os.MkdirTemp("", "weft-example")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "keyring.json")
	if err := seal.WriteKeyringFile(path, ring); err != nil {
		log.Fatal(err)
	}
	loaded, err := seal.LoadKeyringFile(path)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(loaded.ActiveID(), loaded.Fingerprint().Equal(ring.Fingerprint()))
	// Output:
	// seal.Key{id:"2026-08", secret:REDACTED}
	// 2026-08 true
}

// Build a manager from a keyring and seal state bound to an operation.
func ExampleNewManager() {
	key, _ := seal.GenerateKey("2026-08")
	ring, _ := seal.NewKeyring(key)
	m := seal.NewManager(ring, nil)
	ctx := context.Background()

	binding := []byte("endpoint, protocol version, method, partition, params digest")
	token, err := m.Seal(ctx, binding, []byte(`{"phase":"waiting-for-approval"}`))
	if err != nil {
		log.Fatal(err)
	}
	state, err := m.Open(ctx, token, binding)
	fmt.Println(string(state), err)

	// A token presented for another operation does not open, and the error
	// does not say why; Reason is for server-side metrics.
	_, err = m.Open(ctx, token, []byte("another operation"))
	fmt.Println(errors.Is(err, seal.ErrInvalidState), seal.Reason(err))
	// Output:
	// {"phase":"waiting-for-approval"} <nil>
	// true auth_failed
}

// Rotate a single server's key: tokens sealed under the old key keep opening
// until the old key is removed.
func ExampleManager_Rotate() {
	old, _ := seal.GenerateKey("2026-08")
	ring, _ := seal.NewKeyring(old)
	m := seal.NewManager(ring, nil)
	ctx := context.Background()
	token, _ := m.Seal(ctx, nil, []byte("sealed under 2026-08"))

	next, _ := seal.GenerateKey("2026-09")
	if err := m.Rotate(next); err != nil { // Stage + Activate
		log.Fatal(err)
	}
	s := m.Snapshot()
	fmt.Println(s.ActiveID, s.VerificationIDs)
	state, err := m.Open(ctx, token, nil)
	fmt.Println(string(state), err)

	// After the maximum state lifetime has passed, remove the old key.
	removed, err := m.Remove("2026-08")
	fmt.Println(removed, err)
	_, err = m.Open(ctx, token, nil)
	fmt.Println(seal.Reason(err))
	// Output:
	// 2026-09 [2026-08]
	// sealed under 2026-08 <nil>
	// true <nil>
	// unknown_key
}

// On a fleet, stage the new key on every instance, compare fingerprints,
// then activate everywhere (see docs/key-rotation.md).
func ExampleManager_Stage() {
	old, _ := seal.GenerateKey("2026-08")
	next, _ := seal.GenerateKey("2026-09")
	ring, _ := seal.NewKeyring(old)
	fleet := []*seal.Manager{seal.NewManager(ring, nil), seal.NewManager(ring, nil)}

	for _, m := range fleet {
		if err := m.Stage(next); err != nil {
			log.Fatal(err)
		}
	}
	fmt.Println(fleet[0].Snapshot().Fingerprint.Equal(fleet[1].Snapshot().Fingerprint))
	for _, m := range fleet {
		if err := m.Activate("2026-09"); err != nil {
			log.Fatal(err)
		}
	}
	fmt.Println(fleet[0].Snapshot().Fingerprint.Equal(fleet[1].Snapshot().Fingerprint))
	// Output:
	// true
	// true
}

// Hold a reservation across a seal so that the key cannot be removed
// underneath it.
func ExampleManager_Reserve() {
	key, _ := seal.GenerateKey("2026-08")
	ring, _ := seal.NewKeyring(key)
	m := seal.NewManager(ring, nil)

	r, err := m.Reserve()
	if err != nil {
		log.Fatal(err)
	}
	defer r.Release()
	token, err := r.Seal([]byte("binding"), []byte("state"))
	fmt.Println(r.KeyID(), len(token) > 0, err)
	// Output:
	// 2026-08 true <nil>
}
