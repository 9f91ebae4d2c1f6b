// Package stdiocmd runs an MCP server command for the stdio transport: its
// stdin and stdout on pipes of their own, and the shutdown the spec asks
// for (close its stdin, wait, SIGTERM, wait, SIGKILL). The client's
// CommandTransport and the gateway's stdio upstreams share it.
package stdiocmd

import (
	"os"
	"os/exec"
	"syscall"
	"time"
)

// Command is a started server command.
type Command struct {
	// Stdin writes to the command; Stdout reads what it writes.
	Stdin, Stdout *os.File

	cmd     *exec.Cmd
	group   bool
	exited  chan struct{}
	waitErr error
}

// Start starts cmd with its stdin and stdout on new pipes (own pipes, not
// cmd.StdoutPipe: Wait closes those as soon as the command exits, losing
// what it wrote last). cmd's Stdin and Stdout must be unset. With group,
// the command leads a process group of its own and Shutdown's signals
// reach its children too.
func Start(cmd *exec.Cmd, group bool) (*Command, error) {
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	cmd.Stdin, cmd.Stdout = inR, outW
	if group {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	}
	err = cmd.Start()
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return nil, err
	}
	c := &Command{Stdin: inW, Stdout: outR, cmd: cmd, group: group, exited: make(chan struct{})}
	go func() {
		c.waitErr = c.cmd.Wait()
		close(c.exited)
	}()
	return c, nil
}

// Exited is closed when the command has exited.
func (c *Command) Exited() <-chan struct{} { return c.exited }

// WaitErr is what cmd.Wait returned; call it after Exited is closed.
func (c *Command) WaitErr() error { return c.waitErr }

// Shutdown closes the command's stdin and waits up to timeout for it to
// exit, then sends SIGTERM and waits again, then SIGKILL; last it closes
// Stdout. It returns once the command has exited.
func (c *Command) Shutdown(timeout time.Duration) {
	_ = c.Stdin.Close()
	wait := func() bool {
		t := time.NewTimer(timeout)
		defer t.Stop()
		select {
		case <-c.exited:
			return true
		case <-t.C:
			return false
		}
	}
	if !wait() {
		c.signal(syscall.SIGTERM)
		if !wait() {
			c.signal(syscall.SIGKILL)
			<-c.exited
		}
	}
	_ = c.Stdout.Close()
}

func (c *Command) signal(sig syscall.Signal) {
	if c.group {
		_ = syscall.Kill(-c.cmd.Process.Pid, sig)
		return
	}
	_ = c.cmd.Process.Signal(sig)
}
