package stdiocmd

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestShutdown(t *testing.T) {
	tests := []struct {
		name   string
		script string
		group  bool
		// wantSignal is the signal that ended the command (0: it exited
		// on its own when its stdin closed).
		wantSignal syscall.Signal
	}{
		{"exits on stdin EOF", `echo ready; cat >/dev/null`, false, 0},
		{"needs SIGTERM", `echo ready; exec sleep 30 </dev/null`, false, syscall.SIGTERM},
		{"ignores SIGTERM", `trap '' TERM; echo ready; exec sleep 30 </dev/null`, false, syscall.SIGKILL},
		{"group: SIGTERM", `echo ready; exec sleep 30 </dev/null`, true, syscall.SIGTERM},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Start(exec.Command("sh", "-c", tt.script), tt.group)
			if err != nil {
				t.Fatal(err)
			}
			line, err := bufio.NewReader(c.Stdout).ReadString('\n')
			if err != nil || line != "ready\n" {
				t.Fatalf("first line %q, %v", line, err)
			}
			c.Shutdown(100 * time.Millisecond)
			select {
			case <-c.Exited():
			default:
				t.Fatal("Shutdown returned before the command exited")
			}
			var got syscall.Signal
			var ee *exec.ExitError
			if errors.As(c.WaitErr(), &ee) {
				if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
					got = ws.Signal()
				}
			} else if c.WaitErr() != nil {
				t.Fatalf("wait: %v", c.WaitErr())
			}
			if got != tt.wantSignal {
				t.Errorf("ended by signal %v, want %v (wait: %v)", got, tt.wantSignal, c.WaitErr())
			}
			if _, err := c.Stdout.Read(make([]byte, 1)); err == nil || errors.Is(err, io.EOF) {
				t.Errorf("Stdout is still open after Shutdown (read: %v)", err)
			}
		})
	}
}

// TestGroupReachesChildren shows that with group the signals reach the
// command's children, which a plain SIGTERM to the command leaves running.
func TestGroupReachesChildren(t *testing.T) {
	for _, group := range []bool{false, true} {
		t.Run("group="+strconv.FormatBool(group), func(t *testing.T) {
			cmd := exec.Command("sh", "-c", `sleep 30 </dev/null >/dev/null & echo $!; wait`)
			if !group {
				// A process group of its own all the same, for the cleanup
				// only: Start without group signals the command alone.
				cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			}
			c, err := Start(cmd, group)
			if err != nil {
				t.Fatal(err)
			}
			pgid := cmd.Process.Pid
			t.Cleanup(func() {
				_ = syscall.Kill(-pgid, syscall.SIGKILL) // the child, whatever happened
				c.Shutdown(time.Millisecond)
			})
			line, err := bufio.NewReader(c.Stdout).ReadString('\n')
			if err != nil {
				t.Fatal(err)
			}
			child, err := strconv.Atoi(strings.TrimSpace(line))
			if err != nil {
				t.Fatal(err)
			}
			if !alive(t, child) {
				t.Fatalf("child %d is not running before Shutdown", child)
			}
			c.Shutdown(100 * time.Millisecond)
			// A child Shutdown reached dies at once; one it did not is
			// watched as long, so that a late death is seen too.
			gone := false
			for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
				if !alive(t, child) {
					gone = true
					break
				}
			}
			if gone != group {
				t.Errorf("child gone = %v, want %v", gone, group)
			}
		})
	}
}

// alive reports whether process pid runs. A zombie (exited, not yet reaped
// by its parent: here init, once the shell is gone) is not alive, though it
// passes kill(pid, 0); on Linux its state in /proc/PID/stat tells.
func alive(t *testing.T, pid int) bool {
	t.Helper()
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	switch procState(t, pid) {
	case 'Z', 'X', 0:
		return false
	}
	return true
}

// procState is the state of process pid in /proc/PID/stat: 'R', 'S', 'Z'
// and so on, 0 if it is gone, '?' without procfs.
func procState(t *testing.T, pid int) byte {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if _, err := os.Stat("/proc/self/stat"); err != nil {
			return '?'
		}
		return 0
	case err != nil:
		t.Fatalf("process %d: %v", pid, err)
	}
	// "pid (comm) state ...": comm may hold anything, ")" included.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		t.Fatalf("process %d: unexpected /proc stat %q", pid, b)
	}
	return b[i+2]
}

// TestAlive: a zombie is dead to alive, though kill(pid, 0) finds it.
func TestAlive(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no procfs: zombies cannot be told from running processes")
	}
	tests := []struct {
		name   string
		script string
		zombie bool // wait until it has exited, not reaping it
		reaped bool // wait for it
		want   bool
	}{
		{"running", "exec sleep 30", false, false, true},
		{"zombie", "exit 0", true, false, false},
		{"reaped", "exit 0", false, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := exec.Command("sh", "-c", tt.script)
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			pid := cmd.Process.Pid
			waited := false
			t.Cleanup(func() {
				if !waited {
					_ = cmd.Process.Kill()
					_ = cmd.Wait()
				}
			})
			if tt.zombie {
				for deadline := time.Now().Add(10 * time.Second); procState(t, pid) != 'Z'; time.Sleep(time.Millisecond) {
					if time.Now().After(deadline) {
						t.Fatalf("process %d never exited: state %q", pid, procState(t, pid))
					}
				}
				if err := syscall.Kill(pid, 0); err != nil {
					t.Fatalf("kill(pid, 0) on the zombie: %v; the case shows nothing", err)
				}
			}
			if tt.reaped {
				_ = cmd.Wait()
				waited = true
			}
			if got := alive(t, pid); got != tt.want {
				t.Errorf("alive = %v, want %v", got, tt.want)
			}
		})
	}
}
