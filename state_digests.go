package weft

import (
	"hash/maphash"
	"sync/atomic"
)

// digestCache remembers the params digests of the request state this
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
// (digestSlots × maxDigestKey) and a lookup is one atomic load.
type digestCache struct {
	seed  maphash.Seed
	slots [digestSlots]atomic.Pointer[digestEntry]
}

const (
	digestSlots  = 256
	maxDigestKey = 2048 // longer keys are not remembered
)

type digestEntry struct {
	key    string
	digest [32]byte
}

func (c *digestCache) slot(key []byte) *atomic.Pointer[digestEntry] {
	return &c.slots[maphash.Bytes(c.seed, key)%digestSlots]
}

// lookup returns the digest remembered for key.
func (c *digestCache) lookup(key []byte) ([32]byte, bool) {
	if e := c.slot(key).Load(); e != nil && e.key == string(key) {
		return e.digest, true
	}
	return [32]byte{}, false
}

// remember stores the digest of key, replacing its slot's entry.
func (c *digestCache) remember(key string, d [32]byte) {
	if len(key) <= maxDigestKey {
		c.slot([]byte(key)).Store(&digestEntry{key: key, digest: d})
	}
}
