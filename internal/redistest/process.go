package redistest

import (
	"os"
	"os/exec"
	"syscall"
)

// process is one run of a server binary. A goroutine reaps it as soon as it
// exits, so it never lingers as a zombie and done tells whether it runs.
type process struct {
	cmd  *exec.Cmd
	done chan struct{} // closed once the process has exited and been reaped
}

// spawn starts binary with conf as its config file, env added to the
// environment. Its stdout and stderr go to console, which catches what
// Redis prints before it opens its log file (config errors).
func spawn(binary string, env []string, conf, dir, console string) (*process, error) {
	out, err := os.OpenFile(console, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600) //nolint:gosec // G304: the console file in the server's own home directory
	if err != nil {
		return nil, err
	}
	// The child has its own copy of the descriptor once started: closing
	// ours cannot lose what it writes.
	defer func() { _ = out.Close() }()
	cmd := exec.Command(binary, conf) //nolint:gosec,noctx // G204: starting redis-server/redis-sentinel is this harness's job; noctx: the server outlives the call that starts it, kill() stops it
	cmd.Dir = dir
	if len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &process{cmd: cmd, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

func (p *process) pid() int { return p.cmd.Process.Pid }

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// signal ignores the error: the only one possible is that the process has
// already exited, which every caller tolerates.
func (p *process) signal(sig syscall.Signal) {
	_ = p.cmd.Process.Signal(sig)
}

// kill continues a paused (SIGSTOPped) process before SIGKILL so that it is
// never left frozen, then waits until it has been reaped.
func (p *process) kill() {
	p.signal(syscall.SIGCONT)
	p.signal(syscall.SIGKILL)
	<-p.done
}
