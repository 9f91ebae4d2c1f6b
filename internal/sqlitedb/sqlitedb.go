// Package sqlitedb opens a SQLite database file (modernc.org/sqlite, no
// cgo) the way Weft's stores use it: in WAL mode with a busy timeout, one
// connection for writes, whose transactions take the write lock up front
// (BEGIN IMMEDIATE), so that writers of one process queue in Go, and a pool
// of read-only connections, which never wait for the writer.
package sqlitedb

import (
	"database/sql"
	"fmt"
	"net/url"
	"time"

	_ "modernc.org/sqlite" // the "sqlite" database/sql driver
)

// Config says how to open a database.
type Config struct {
	// BusyTimeout is how long a connection waits for another process's
	// lock.
	BusyTimeout time.Duration
	// Synchronous is SQLite's synchronous setting: "FULL" or "NORMAL".
	Synchronous string
	// Pragmas are further pragmas for every connection, such as
	// "foreign_keys(1)".
	Pragmas []string
	// ReadConns bounds the read-only connections (at least 1).
	ReadConns int
}

// Open opens the writer and the readers of the database at path (a plain
// file path). The caller closes both.
func Open(path string, c Config) (write, read *sql.DB, err error) {
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
	n := max(c.ReadConns, 1)
	read.SetMaxOpenConns(n)
	read.SetMaxIdleConns(n)
	return write, read, nil
}
