package sqlitedb

import (
	"errors"
	"path/filepath"
	"testing"
	"time"
)

var errTestInvalid = errors.New("test: invalid")

// TestOpenRefuses: what is not a plain file path, and a synchronous setting
// other than FULL or NORMAL, are refused with the caller's Invalid error.
func TestOpenRefuses(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name string
		path string
		c    Config
	}{
		{"empty path", "", Config{}},
		{"memory", ":memory:", Config{}},
		{"uri", "file:x.db", Config{}},
		{"query", filepath.Join(dir, "x.db?mode=ro"), Config{}},
		{"bad synchronous", filepath.Join(dir, "x.db"), Config{Synchronous: "OFF"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.c.Invalid = errTestInvalid
			w, r, err := Open(tc.path, tc.c)
			if err == nil {
				_ = w.Close()
				_ = r.Close()
				t.Fatal("Open succeeded, want an error")
			}
			if !errors.Is(err, errTestInvalid) {
				t.Errorf("Open = %v, want it to wrap Config.Invalid", err)
			}
		})
	}
}

// TestOpenSettings: the settings, or their defaults, are those of the
// connections.
func TestOpenSettings(t *testing.T) {
	tests := []struct {
		name      string
		c         Config
		busyMS    int64
		sync      int64 // PRAGMA synchronous: 1 NORMAL, 2 FULL
		readConns int
	}{
		{"defaults", Config{}, DefaultBusyTimeout.Milliseconds(), 2, DefaultReadConns},
		{"set", Config{BusyTimeout: 1500 * time.Millisecond, Synchronous: "normal", ReadConns: 2}, 1500, 1, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w, r, err := Open(filepath.Join(t.TempDir(), "x.db"), tc.c)
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			defer r.Close()
			for _, check := range []struct {
				pragma string
				want   int64
			}{{"busy_timeout", tc.busyMS}, {"synchronous", tc.sync}} {
				var wgot, rgot int64
				if err := w.QueryRow("PRAGMA " + check.pragma).Scan(&wgot); err != nil {
					t.Fatal(err)
				}
				if err := r.QueryRow("PRAGMA " + check.pragma).Scan(&rgot); err != nil {
					t.Fatal(err)
				}
				if wgot != check.want || rgot != check.want {
					t.Errorf("%s: writer %d, readers %d; want %d", check.pragma, wgot, rgot, check.want)
				}
			}
			if got := r.Stats().MaxOpenConnections; got != tc.readConns {
				t.Errorf("read connections at most %d, want %d", got, tc.readConns)
			}
			if got := w.Stats().MaxOpenConnections; got != 1 {
				t.Errorf("write connections at most %d, want 1", got)
			}
		})
	}
}
