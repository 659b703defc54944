package elect

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"syscall"
	"time"
)

// process is a running command in its own process group.
//
// The group lets the elector signal the command together with anything it
// spawned, and keeps a terminal's Ctrl-C (sent to the foreground group) for
// the elector, which then stops the command in order. The child also gets
// SIGKILL when the elector dies (Pdeathsig), so a leader killed with -9 does
// not leave its command running unsupervised; Pdeathsig fires when the
// forking OS thread exits, which is why the thread that starts the child is
// locked until the child has been waited for.
type process struct {
	cmd      *exec.Cmd
	done     chan struct{} // closed once the child has been waited for
	stopOnce sync.Once
}

// startError is a command that could not be started, with the exit code a
// shell would report for it.
type startError struct {
	code int
	err  error
}

func (e *startError) Error() string { return e.err.Error() }
func (e *startError) Unwrap() error { return e.err }

// startProcess starts argv with env and the given output streams; stdin is
// /dev/null (a background process group must not read the terminal).
func startProcess(argv, env []string, stdout, stderr io.Writer) (*process, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = env
	cmd.Stdout = stdout
	cmd.Stderr = stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	// When output goes through pipes (non-file writers), grandchildren that
	// keep the pipe open must not block Wait forever.
	cmd.WaitDelay = time.Second
	p := &process{cmd: cmd, done: make(chan struct{})}
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		// The exit status is read from cmd.ProcessState; the error
		// only repeats it (or reports WaitDelay expiring on pipes).
		_ = cmd.Wait()
		close(p.done)
	}()
	if err := <-started; err != nil {
		code := ExitCannotExecute
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
			code = ExitNotFound
		}
		return nil, &startError{code: code, err: fmt.Errorf("start %q: %w", argv[0], err)}
	}
	return p, nil
}

// Pid is the child's process id, which is also its process group id.
func (p *process) Pid() int { return p.cmd.Process.Pid }

// Done is closed when the child has exited and been reaped.
func (p *process) Done() <-chan struct{} { return p.done }

// Stop sends SIGTERM to the child's process group, then SIGKILL if it has
// not exited after grace, and returns once the child has been reaped. It
// is safe to call concurrently and more than once; it does nothing to a
// child that has already exited.
func (p *process) Stop(grace time.Duration) {
	p.stopOnce.Do(func() {
		select {
		case <-p.done:
			return
		default:
		}
		pgid := p.Pid()
		// ESRCH means the group is already gone: nothing to do.
		_ = syscall.Kill(-pgid, syscall.SIGTERM)
		timer := time.NewTimer(grace)
		defer timer.Stop()
		select {
		case <-p.done:
		case <-timer.C:
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
		}
	})
	<-p.done
}

// ExitCode is the child's exit status as a shell reports it: its code, or
// 128+signal when a signal killed it. Valid after Done.
func (p *process) ExitCode() int {
	st := p.cmd.ProcessState
	if st == nil {
		return ExitCannotExecute
	}
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return st.ExitCode()
}
