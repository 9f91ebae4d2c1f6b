package stdiocmd

import (
	"bufio"
	"errors"
	"io"
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
			c, err := Start(exec.Command("sh", "-c", `sleep 30 </dev/null >/dev/null & echo $!; wait`), group)
			if err != nil {
				t.Fatal(err)
			}
			line, err := bufio.NewReader(c.Stdout).ReadString('\n')
			if err != nil {
				t.Fatal(err)
			}
			child, err := strconv.Atoi(strings.TrimSpace(line))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = syscall.Kill(child, syscall.SIGKILL) })
			c.Shutdown(100 * time.Millisecond)
			gone := false
			for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
				if syscall.Kill(child, 0) != nil {
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
