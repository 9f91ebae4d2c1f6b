package testpg

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// ClusterUser is the superuser of a [Cluster] (trust authentication on
// loopback only), and ClusterDatabase the database it creates.
const (
	ClusterUser     = "weft"
	ClusterDatabase = "test"
)

// Cluster is a throwaway PostgreSQL cluster: initdb into a fresh temporary
// directory, served by pg_ctl on a free loopback port of its own. Tests
// that must stop or restart PostgreSQL use one, so the machine's clusters
// (and whoever else uses them) are never touched.
//
// When the process runs as root the server runs as the OS user "postgres"
// (WEFT_PG_USER overrides it), through runuser, because PostgreSQL refuses
// to run as root.
type Cluster struct {
	bin   string // directory holding initdb and pg_ctl
	dir   string // the cluster's directory (data, socket, log); removed by Stop
	port  int
	runAs string // OS user the server runs as; "" for this process's user
}

// pgBinDir returns the directory of initdb and pg_ctl: WEFT_PG_BIN, else
// the newest /usr/lib/postgresql/<version>/bin (Debian's layout), else the
// directory of pg_ctl on PATH.
func pgBinDir() (string, error) {
	if d := os.Getenv("WEFT_PG_BIN"); d != "" {
		return d, nil
	}
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/pg_ctl")
	if len(matches) > 0 {
		version := func(p string) int {
			v, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(p))))
			return v
		}
		slices.SortFunc(matches, func(a, b string) int { return version(a) - version(b) })
		return filepath.Dir(matches[len(matches)-1]), nil
	}
	if p, err := exec.LookPath("pg_ctl"); err == nil {
		return filepath.Dir(p), nil
	}
	return "", fmt.Errorf("%w: install Debian's postgresql package (initdb and pg_ctl under /usr/lib/postgresql/*/bin) or set WEFT_PG_BIN", ErrNoServerBinaries)
}

// ErrNoServerBinaries reports that initdb and pg_ctl were not found.
var ErrNoServerBinaries = errors.New("testpg: no PostgreSQL server binaries")

// NewCluster creates and starts a throwaway cluster with database
// [ClusterDatabase]. Call Stop to stop it and remove its directory.
func NewCluster(ctx context.Context) (*Cluster, error) {
	bin, err := pgBinDir()
	if err != nil {
		return nil, err
	}
	for _, tool := range []string{"initdb", "pg_ctl"} {
		if _, err := os.Stat(filepath.Join(bin, tool)); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrNoServerBinaries, err)
		}
	}
	c := &Cluster{bin: bin}
	if os.Geteuid() == 0 {
		c.runAs = os.Getenv("WEFT_PG_USER")
		if c.runAs == "" {
			c.runAs = "postgres"
		}
		if _, err := exec.LookPath("runuser"); err != nil {
			return nil, fmt.Errorf("testpg: running as root, the cluster must run as user %s through runuser: %w", c.runAs, err)
		}
	}
	if c.dir, err = os.MkdirTemp("", "weft-pg-"); err != nil {
		return nil, fmt.Errorf("testpg: %w", err)
	}
	if err := c.setup(ctx); err != nil {
		c.forceStop()
		_ = os.RemoveAll(c.dir)
		return nil, err
	}
	return c, nil
}

func (c *Cluster) setup(ctx context.Context) error {
	if c.runAs != "" {
		u, err := user.Lookup(c.runAs)
		if err != nil {
			return fmt.Errorf("testpg: running as root, the cluster needs OS user %s (set WEFT_PG_USER): %w", c.runAs, err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(c.dir, uid, gid); err != nil {
			return fmt.Errorf("testpg: %w", err)
		}
	}
	if out, err := c.run(ctx, "initdb", "-D", c.dataDir(), "-U", ClusterUser, "-A", "trust", "-E", "UTF8",
		"--no-locale", "--no-sync", "--no-instructions"); err != nil {
		return fmt.Errorf("testpg: initdb: %w\n%s", err, out)
	}
	// The port is free when chosen; another process may take it before the
	// server binds it, so a failed start is retried on another port.
	var err error
	for range 3 {
		if c.port, err = freePort(); err != nil {
			return err
		}
		opts := fmt.Sprintf("-c listen_addresses=127.0.0.1 -c port=%d -c unix_socket_directories='%s' -c fsync=off", c.port, c.dir)
		var out []byte
		if out, err = c.run(ctx, "pg_ctl", "-D", c.dataDir(), "-l", c.LogPath(), "-w", "-t", "60", "-o", opts, "start"); err == nil {
			break
		}
		err = fmt.Errorf("testpg: pg_ctl start on port %d: %w\n%s%s", c.port, err, out, c.logTail())
	}
	if err != nil {
		return err
	}
	conn, err := pgx.Connect(ctx, c.dsn("postgres"))
	if err != nil {
		return fmt.Errorf("testpg: connecting to the new cluster: %w", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+ClusterDatabase); err != nil {
		return fmt.Errorf("testpg: create database: %w", err)
	}
	return nil
}

// StartCluster starts a throwaway cluster for t and stops and removes it
// when t ends. Without PostgreSQL's server binaries the test fails in CI
// (env CI set) and is skipped elsewhere.
func StartCluster(t testing.TB) *Cluster {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := NewCluster(ctx)
	if err != nil {
		if os.Getenv("CI") == "" && errors.Is(err, ErrNoServerBinaries) {
			t.Skip(err)
		}
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := c.Stop(ctx); err != nil {
			t.Error(err)
		}
	})
	return c
}

// DSN returns the URL of database [ClusterDatabase] as [ClusterUser].
func (c *Cluster) DSN() string { return c.dsn(ClusterDatabase) }

func (c *Cluster) dsn(db string) string {
	return fmt.Sprintf("postgres://%s@127.0.0.1:%d/%s?sslmode=disable", ClusterUser, c.port, db)
}

// Port returns the cluster's loopback port.
func (c *Cluster) Port() int { return c.port }

// LogPath returns the server's log file.
func (c *Cluster) LogPath() string { return filepath.Join(c.dir, "server.log") }

func (c *Cluster) dataDir() string { return filepath.Join(c.dir, "data") }

// Restart stops the server (fast shutdown: open connections are
// terminated) and starts it again on the same port and data; it returns
// once the server accepts connections.
func (c *Cluster) Restart(ctx context.Context) error {
	if out, err := c.run(ctx, "pg_ctl", "-D", c.dataDir(), "-l", c.LogPath(), "-w", "-t", "60", "-m", "fast", "restart"); err != nil {
		return fmt.Errorf("testpg: pg_ctl restart: %w\n%s%s", err, out, c.logTail())
	}
	return nil
}

// Stop stops the server and removes the cluster's directory.
func (c *Cluster) Stop(ctx context.Context) error {
	out, err := c.run(ctx, "pg_ctl", "-D", c.dataDir(), "-w", "-t", "60", "-m", "fast", "stop")
	if err != nil {
		c.forceStop()
		err = fmt.Errorf("testpg: pg_ctl stop: %w\n%s", err, out)
	}
	if rerr := os.RemoveAll(c.dir); rerr != nil && err == nil {
		err = fmt.Errorf("testpg: %w", rerr)
	}
	return err
}

// forceStop stops a server that may be running, without waiting for
// clients (used when setup or a fast stop failed).
func (c *Cluster) forceStop() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, _ = c.run(ctx, "pg_ctl", "-D", c.dataDir(), "-w", "-t", "20", "-m", "immediate", "stop")
}

// run runs a PostgreSQL tool as the cluster's OS user, in the cluster's
// directory.
func (c *Cluster) run(ctx context.Context, tool string, args ...string) ([]byte, error) {
	path := filepath.Join(c.bin, tool)
	var cmd *exec.Cmd
	if c.runAs != "" {
		cmd = exec.CommandContext(ctx, "runuser", append([]string{"-u", c.runAs, "--", path}, args...)...)
	} else {
		cmd = exec.CommandContext(ctx, path, args...)
	}
	cmd.Dir = c.dir
	// pg_ctl start leaves the server running with its output in the log
	// file; nothing must hold our pipes open.
	cmd.Stdin = nil
	return cmd.CombinedOutput()
}

// logTail returns the end of the server log, for error messages.
func (c *Cluster) logTail() string {
	b, err := os.ReadFile(c.LogPath())
	if err != nil {
		return ""
	}
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return "server log (end):\n" + string(b)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("testpg: choosing a port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// OpenDB returns a database/sql handle on the cluster's database, closed
// when t ends.
func (c *Cluster) OpenDB(t testing.TB) *sql.DB {
	t.Helper()
	db, err := sql.Open("pgx", c.DSN())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}
