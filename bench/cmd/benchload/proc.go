package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// clockTicks is USER_HZ, the unit of utime and stime in /proc/<pid>/stat;
// 100 on every Linux architecture Go supports for this purpose.
const clockTicks = 100

// server is one benchserver subprocess.
type server struct {
	impl  string
	addr  string
	cmd   *exec.Cmd
	stdin io.WriteCloser
	// statsc carries the server's answers to "stats" (see serverStats).
	statsc chan string
	// behind is a server this one forwards to (a gateway's upstream):
	// its CPU counts as this one's.
	behind *server
}

// serverStats is what one server process has done so far: its GC cycles,
// heap bytes and objects allocated (runtime/metrics, from the process
// itself) and its read and write system calls (/proc/<pid>/io).
type serverStats struct {
	gcs, bytes, objects uint64
	gcCPU, scavCPU      float64 // seconds
	syscr, syscw        uint64
}

// stats asks the server for its counters.
func (s *server) stats() (serverStats, error) {
	var st serverStats
	if _, err := io.WriteString(s.stdin, "stats\n"); err != nil {
		return st, err
	}
	select {
	case l, ok := <-s.statsc:
		if !ok {
			return st, fmt.Errorf("benchserver -impl %s exited", s.impl)
		}
		if _, err := fmt.Sscanf(l, "stats %d %d %d %g %g", &st.gcs, &st.bytes, &st.objects, &st.gcCPU, &st.scavCPU); err != nil {
			return st, fmt.Errorf("benchserver -impl %s: bad stats line %q", s.impl, l)
		}
	case <-time.After(10 * time.Second):
		return st, fmt.Errorf("benchserver -impl %s did not answer stats", s.impl)
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(s.cmd.Process.Pid) + "/io")
	if err != nil {
		return st, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, _ := strings.Cut(line, ": ")
		switch k {
		case "syscr":
			st.syscr, _ = strconv.ParseUint(v, 10, 64)
		case "syscw":
			st.syscw, _ = strconv.ParseUint(v, 10, 64)
		}
	}
	return st, nil
}

// buildServer builds cmd/benchserver into dir and returns the binary's path.
func buildServer(ctx context.Context, dir string) (string, error) {
	bin := filepath.Join(dir, "benchserver")
	cmd := exec.CommandContext(ctx, "go", "build", "-mod=mod", "-o", bin, "./cmd/benchserver")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go build ./cmd/benchserver (run benchload from the bench directory): %w", err)
	}
	return bin, nil
}

// startServer starts bin -impl impl on a free loopback port, with extra
// flags args.
func startServer(bin, impl string, args ...string) (*server, error) {
	cmd := exec.Command(bin, append([]string{"-impl", impl, "-addr", "127.0.0.1:0"}, args...)...)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	line := make(chan string, 1)
	statsc := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		if sc.Scan() {
			line <- sc.Text()
		}
		close(line)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "stats ") {
				statsc <- sc.Text()
			}
		}
		close(statsc)
	}()
	select {
	case l, ok := <-line:
		addr, found := strings.CutPrefix(l, "listening ")
		if !ok || !found {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			return nil, fmt.Errorf("benchserver -impl %s did not start (%q)", impl, l)
		}
		return &server{impl: impl, addr: addr, cmd: cmd, stdin: stdin, statsc: statsc}, nil
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, fmt.Errorf("benchserver -impl %s did not start within 30s", impl)
	}
}

// stop ends the server (closing its stdin ends it) and waits.
func (s *server) stop() {
	_ = s.stdin.Close()
	done := make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		_ = s.cmd.Process.Kill()
		<-done
	}
}

// cpu returns the process's user+system CPU time so far, from
// /proc/<pid>/stat (fields 14 and 15, in clock ticks).
func (s *server) cpu() (time.Duration, error) {
	d, err := procCPU(s.cmd.Process.Pid)
	if err != nil || s.behind == nil {
		return d, err
	}
	b, err := s.behind.cpu()
	return d + b, err
}

func procCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces; fields restart after ')'.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, fmt.Errorf("unexpected /proc/%d/stat", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state); utime is field 14, stime field 15.
	if len(f) < 13 {
		return 0, fmt.Errorf("unexpected /proc/%d/stat", pid)
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("unexpected /proc/%d/stat", pid)
	}
	return time.Duration(ut+st) * time.Second / clockTicks, nil
}
