// Package digestcache remembers the params digests of request state a
// server sealed, so that a retry reaching the same server binds its state
// without canonicalizing and hashing its params again.
package digestcache

import (
	"hash/maphash"
	"sync/atomic"
)

// Cache remembers the params digests of the request state this
// server sealed, so that a retry reaching the same server (every retry,
// on a single instance) binds its state without canonicalizing and hashing
// its params again. An entry is keyed by the compact encoding of the stable
// params in document order (exactjson.AppendJSONWithout, the members
// paramsDigest covers): equal keys are equal params, whose canonical form
// and so digest are equal, and a hit compares the whole key, never a hash
// alone. A retry whose client re-encoded its params differently, or that
// reaches another instance, misses and computes the digest.
//
// The cache is direct-mapped: a fixed number of slots, each holding the
// latest entry whose key hashed to it, so its memory is bounded
// (256 slots × MaxKey) and a lookup is one atomic load.
type Cache struct {
	seed  maphash.Seed
	slots [slots]atomic.Pointer[entry]
}

// New returns an empty cache.
func New() *Cache { return &Cache{seed: maphash.MakeSeed()} }

const (
	slots = 256
	// MaxKey bounds the keys remembered; longer ones are not.
	MaxKey = 2048
)

type entry struct {
	key    string
	digest [32]byte
}

func (c *Cache) slot(key []byte) *atomic.Pointer[entry] {
	return &c.slots[maphash.Bytes(c.seed, key)%slots]
}

// Lookup returns the digest remembered for key.
func (c *Cache) Lookup(key []byte) ([32]byte, bool) {
	if e := c.slot(key).Load(); e != nil && e.key == string(key) {
		return e.digest, true
	}
	return [32]byte{}, false
}

// Remember stores the digest of key, replacing its slot's entry.
func (c *Cache) Remember(key string, d [32]byte) {
	if len(key) <= MaxKey {
		c.slot([]byte(key)).Store(&entry{key: key, digest: d})
	}
}
