// Package sqlitedb opens a SQLite database file (modernc.org/sqlite, no
// cgo) the way Weft's stores use it: in WAL mode with a busy timeout, one
// connection for writes, whose transactions take the write lock up front
// (BEGIN IMMEDIATE), so that writers of one process queue in Go, and a pool
// of read-only connections, which never wait for the writer.
package sqlitedb

import (
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	_ "modernc.org/sqlite" // the "sqlite" database/sql driver
)

// Defaults of Config.
const (
	DefaultBusyTimeout = 10 * time.Second
	DefaultSynchronous = "FULL"
	DefaultReadConns   = 4
)

// Config says how to open a database. Its zero value is the defaults.
type Config struct {
	// BusyTimeout is how long a connection waits for another process's
	// lock (DefaultBusyTimeout if not positive).
	BusyTimeout time.Duration
	// Synchronous is SQLite's synchronous setting: "FULL" or "NORMAL", in
	// any case (DefaultSynchronous if empty).
	Synchronous string
	// Pragmas are further pragmas for every connection, such as
	// "foreign_keys(1)".
	Pragmas []string
	// ReadConns bounds the read-only connections (DefaultReadConns if not
	// positive).
	ReadConns int
	// Invalid is the error that the errors of a path or setting Open
	// refuses wrap: the calling store's ErrInvalid.
	Invalid error
}

// Open opens the writer and the readers of the database at path, a plain
// file path (not ":memory:", a "file:" URI or one with a query). The caller
// closes both.
func Open(path string, c Config) (write, read *sql.DB, err error) {
	invalid := c.Invalid
	if invalid == nil {
		invalid = errors.New("invalid")
	}
	if path == "" || strings.ContainsRune(path, '?') || path == ":memory:" || strings.HasPrefix(path, "file:") {
		return nil, nil, fmt.Errorf("open %q: need a plain file path: %w", path, invalid)
	}
	if c.BusyTimeout <= 0 {
		c.BusyTimeout = DefaultBusyTimeout
	}
	switch mode := strings.ToUpper(c.Synchronous); mode {
	case "":
		c.Synchronous = DefaultSynchronous
	case "FULL", "NORMAL":
		c.Synchronous = mode
	default:
		return nil, nil, fmt.Errorf("open %s: synchronous %q (want FULL or NORMAL): %w", path, c.Synchronous, invalid)
	}
	if c.ReadConns <= 0 {
		c.ReadConns = DefaultReadConns
	}
	params := url.Values{}
	params.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", c.BusyTimeout.Milliseconds()))
	params.Add("_pragma", "journal_mode(WAL)")
	params.Add("_pragma", "synchronous("+c.Synchronous+")")
	for _, p := range c.Pragmas {
		params.Add("_pragma", p)
	}
	params.Set("_txlock", "immediate")
	write, err = sql.Open("sqlite", path+"?"+params.Encode())
	if err != nil {
		return nil, nil, fmt.Errorf("open %s: %w", path, err)
	}
	write.SetMaxOpenConns(1)
	write.SetMaxIdleConns(1)
	write.SetConnMaxLifetime(0)
	write.SetConnMaxIdleTime(0)
	params.Add("_pragma", "query_only(1)")
	read, err = sql.Open("sqlite", path+"?"+params.Encode())
	if err != nil {
		_ = write.Close()
		return nil, nil, fmt.Errorf("open %s for reading: %w", path, err)
	}
	read.SetMaxOpenConns(c.ReadConns)
	read.SetMaxIdleConns(c.ReadConns)
	return write, read, nil
}
