package digestcache

import "testing"

func TestCache(t *testing.T) {
	c := New()
	if _, hit := c.Lookup([]byte("k")); hit {
		t.Fatal("hit in an empty cache")
	}
	c.Remember("k", [32]byte{7})
	if d, hit := c.Lookup([]byte("k")); !hit || d != [32]byte{7} {
		t.Fatalf("Lookup = %v, %v", d, hit)
	}
	// A slot holding another key's entry is a miss, whatever its digest.
	c.slot([]byte("k")).Store(&entry{key: "k ", digest: [32]byte{1}})
	if _, hit := c.Lookup([]byte("k")); hit {
		t.Fatal("hit on another key's entry")
	}
	// Keys beyond MaxKey are not remembered.
	long := string(make([]byte, MaxKey+1))
	c.Remember(long, [32]byte{2})
	if _, hit := c.Lookup([]byte(long)); hit {
		t.Fatal("remembered an oversized key")
	}
}
